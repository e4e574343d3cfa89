package bert

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// kernel6x16 is the AVX2/FMA kernel (gemm_amd64.s): t = A-block · B-panel
// over depth k, with a and b as packed by packA and packed.
//
//go:noescape
func kernel6x16(k int, a, b, t unsafe.Pointer)

func kernelAVX2(k int, a, b []float32, t *[tileRows * panelCols]float32) {
	if k == 0 {
		clear(t[:])
		return
	}
	_ = a[k*tileRows-1]
	_ = b[k*panelCols-1]
	kernel6x16(k, unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(t))
}

var kernel = func() func(int, []float32, []float32, *[tileRows * panelCols]float32) {
	if cpu.X86.HasAVX2 && cpu.X86.HasFMA {
		return kernelAVX2
	}
	return kernelGo
}()
