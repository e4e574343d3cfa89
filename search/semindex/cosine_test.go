package semindex

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestBlockKernel compares the block kernel with the plain Go loop, for
// dimensions the assembly takes (multiples of 8) and ones it leaves to Go.
func TestBlockKernel(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{1, 7, 8, 16, 24, 32, 100, 384} {
		for _, n := range []int{1, 2, 42} {
			vecs := make([]float32, dim*n)
			for i := range vecs {
				vecs[i] = float32(r.NormFloat64())
			}
			q := make([]float32, dim)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			v := encodeVector(vecs)
			got, want := make([]float32, 2*n), make([]float32, 2*n)
			dotNormBlock(v, q, got)
			dotNormBlockGo(v, q, want)
			for i := range got {
				if d := math.Abs(float64(got[i] - want[i])); d > 1e-3*max(1, math.Abs(float64(want[i]))) {
					t.Fatalf("dim %d, %d vectors: value %d is %g, want %g", dim, n, i, got[i], want[i])
				}
			}
		}
	}
	if s := score(0, 0, 1); s != 0 {
		t.Errorf("a zero vector scores %g", s)
	}
	if s := score(2, 4, 1); s != 1 {
		t.Errorf("score(2, 4, 1) = %g, want 1", s)
	}
}

// TestDotKernelEqual: the dots of the dot-only kernel (blocks from the
// cache) equal, bit for bit, those of the dot-and-norm kernel (blocks
// from the file), so a search scores the same whichever it reads.
func TestDotKernelEqual(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dim := range []int{1, 7, 8, 16, 24, 40, 384} {
		for _, n := range []int{1, 3, 512} {
			vecs := make([]float32, dim*n)
			for i := range vecs {
				vecs[i] = float32(r.NormFloat64())
			}
			q := make([]float32, dim)
			for i := range q {
				q[i] = float32(r.NormFloat64())
			}
			v := encodeVector(vecs)
			both, dots := make([]float32, 2*n), make([]float32, n)
			dotNormBlock(v, q, both)
			dotBlock(v, q, dots)
			for i := range dots {
				if math.Float32bits(dots[i]) != math.Float32bits(both[2*i]) {
					t.Fatalf("dim %d, %d vectors: dot %d is %g, with the norms %g", dim, n, i, dots[i], both[2*i])
				}
			}
		}
	}
}
