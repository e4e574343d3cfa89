package semindex

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

var hasFMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// dotNormBlock8 (cosine_amd64.s) is dotNormBlock for dim a multiple of 8.
//
//go:noescape
func dotNormBlock8(v, q unsafe.Pointer, dim, n int, out unsafe.Pointer)

// dotBlock8 (cosine_amd64.s) is dotBlock for dim a multiple of 8.
//
//go:noescape
func dotBlock8(v, q unsafe.Pointer, dim, n int, out unsafe.Pointer)

// dotBlock writes Σ v·q of each vector of the block v to out[i], equal to
// the dots dotNormBlock writes.
func dotBlock(v []byte, q []float32, out []float32) {
	dim, n := len(q), len(out)
	if !hasFMA || dim%8 != 0 || n == 0 {
		dotBlockGo(v, q, out)
		return
	}
	_, _ = v[4*dim*n-1], out[n-1]
	dotBlock8(unsafe.Pointer(&v[0]), unsafe.Pointer(&q[0]), dim, n, unsafe.Pointer(&out[0]))
}

// dotNormBlock writes Σ v·q and Σ v·v of each vector of the block v (whole
// vectors of len(q) values, one after another) to out[2i] and out[2i+1].
func dotNormBlock(v []byte, q []float32, out []float32) {
	dim, n := len(q), len(out)/2
	if !hasFMA || dim%8 != 0 || n == 0 {
		dotNormBlockGo(v, q, out)
		return
	}
	_, _ = v[4*dim*n-1], out[2*n-1]
	dotNormBlock8(unsafe.Pointer(&v[0]), unsafe.Pointer(&q[0]), dim, n, unsafe.Pointer(&out[0]))
}
