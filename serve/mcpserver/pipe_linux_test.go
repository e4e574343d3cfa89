package mcpserver

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// procInt reads a number from a /proc/sys file.
func procInt(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestGrowOutputSocket(t *testing.T) {
	out, peer := socketPair(t)
	defer out.Close()
	defer peer.Close()
	fd := int(out.Fd())
	growOutput(out)
	got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF)
	if err != nil {
		t.Fatal(err)
	}
	// Linux doubles the size asked, capped at wmem_max, for its overhead.
	if want := 2 * min(pipeBytes, procInt(t, "/proc/sys/net/core/wmem_max")); got != want {
		t.Errorf("SO_SNDBUF = %d, want %d", got, want)
	}
}

func TestGrowOutputPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	growOutput(w)
	got, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0)
	if err != nil {
		t.Fatal(err)
	}
	if maxSize := procInt(t, "/proc/sys/fs/pipe-max-size"); maxSize >= pipeBytes && got != pipeBytes {
		t.Errorf("pipe capacity = %d, want %d", got, pipeBytes)
	}
}

// TestGrowOutputKeepsLarger: a socket whose send buffer was set larger
// keeps it.
func TestGrowOutputKeepsLarger(t *testing.T) {
	out, peer := socketPair(t)
	defer out.Close()
	defer peer.Close()
	fd := int(out.Fd())
	if procInt(t, "/proc/sys/net/core/wmem_max") < 2*pipeBytes {
		t.Skip("wmem_max is too small to set a send buffer larger than growOutput's")
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 2*pipeBytes); err != nil {
		t.Fatal(err)
	}
	growOutput(out)
	if got, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_SNDBUF); err != nil || got != 4*pipeBytes {
		t.Errorf("SO_SNDBUF = %d (%v), want %d", got, err, 4*pipeBytes)
	}
}
