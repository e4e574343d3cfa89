package semindex

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// dotNorm8 (cosine_amd64.s) returns Σ v·q and Σ v·v over n values, n a
// multiple of 8; v is little-endian float32 bytes, as amd64 stores them.
//
//go:noescape
func dotNorm8(v, q unsafe.Pointer, n int) (dot, vv float32)

var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

func dotNorm(v []byte, q []float32) (dot, vv float32) {
	n := len(q) &^ 7
	if !hasFMA || n == 0 {
		return dotNormGo(v, q)
	}
	_ = v[4*len(q)-1]
	dot, vv = dotNorm8(unsafe.Pointer(&v[0]), unsafe.Pointer(&q[0]), n)
	d, w := dotNormGo(v[4*n:], q[n:])
	return dot + d, vv + w
}
