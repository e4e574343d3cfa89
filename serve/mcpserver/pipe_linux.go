package mcpserver

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeBytes is the capacity asked for the output pipe (Linux allows
// unprivileged processes up to /proc/sys/fs/pipe-max-size, 1 MiB by
// default), and the send buffer asked for an output socket (up to
// /proc/sys/net/core/wmem_max).
const pipeBytes = 1 << 20

// growOutput enlarges the pipe or socket f writes to, so that a large
// result crosses it in a few writes instead of one per default capacity
// (64 KiB for a pipe, about 200 KiB for a socket: Node starts a server's
// stdio on a socket pair), each blocking the writer until the reader
// drains it. It never shrinks one set larger. Best effort: f stays as it
// is if the system refuses.
func growOutput(f *os.File) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) {
		if fi.Mode()&os.ModeNamedPipe != 0 {
			if n, err := unix.FcntlInt(fd, unix.F_GETPIPE_SZ, 0); err == nil && n < pipeBytes {
				unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeBytes)
			}
			return
		}
		// Linux reports twice the size asked (its own overhead).
		if n, err := unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF); err == nil && n < 2*pipeBytes {
			unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, pipeBytes)
		}
	})
}
