package helper

import (
	"bytes"
	"syscall"
	"testing"
)

// TestDecodeFilter: the filter arrives as whole struct sock_filter
// records, at least one and at most BPF_MAXINSNS; anything else is
// refused before the container is built.
func TestDecodeFilter(t *testing.T) {
	// BPF_RET|BPF_K 0x7fff0000 (allow), then BPF_LD|BPF_W|BPF_ABS 4.
	two := []byte{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f, 0x20, 0, 1, 2, 4, 0, 0, 0}
	f, err := decodeFilter(two)
	want := []syscall.SockFilter{{Code: 0x06, K: 0x7fff0000}, {Code: 0x20, Jt: 1, Jf: 2, K: 4}}
	if err != nil || len(f) != 2 || f[0] != want[0] || f[1] != want[1] {
		t.Fatalf("decodeFilter = %+v, %v; want %+v", f, err, want)
	}
	if _, err := decodeFilter(bytes.Repeat(two[:8], maxFilter)); err != nil {
		t.Errorf("%d instructions: %v", maxFilter, err)
	}
	for _, b := range [][]byte{nil, two[:7], two[:9], bytes.Repeat(two[:8], maxFilter+1)} {
		if _, err := decodeFilter(b); err == nil {
			t.Errorf("%d bytes: accepted", len(b))
		}
	}
}

// TestCloseRangeCloexec: the range's end is the kernel's unsigned int on
// every architecture (on 32-bit ones, a shifted uintptr made it 0 and
// every run failed with EINVAL).
func TestCloseRangeCloexec(t *testing.T) {
	if err := closeRangeCloexec(1 << 20); err != nil { // no descriptor there: nothing changes
		t.Fatal(err)
	}
}
