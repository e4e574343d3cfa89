package bert

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGemm checks the packed product against the textbook triple loop,
// across depths of several passes, ragged tiles and worker counts, with
// the portable kernel and the machine's.
func TestGemm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	kernels := map[string]func(int, []float32, []float32, *[tileRows * panelCols]float32){"go": kernelGo, "machine": kernel}
	for name, k := range kernels {
		saved := kernel
		kernel = k
		for _, sz := range [][3]int{{1, 1, 1}, {7, 17, 3}, {6, 16, 256}, {13, 50, 257}, {31, 33, 600}} {
			m, n, depth := sz[0], sz[1], sz[2]
			a := randSlice(r, m*depth)
			w := randSlice(r, n*depth) // n×depth, as a weight matrix
			bias := randSlice(r, n)
			p := newPacked(depth, n)
			p.packTransposed(w, depth)
			for _, workers := range []int{1, 2, 3} {
				c := make([]float32, m*n)
				var sc gemmScratch
				gemm(c, n, a, depth, m, &p, bias, &sc, workers)
				for i := range m {
					for j := range n {
						var want float64
						for kk := range depth {
							want += float64(a[i*depth+kk]) * float64(w[j*depth+kk])
						}
						want += float64(bias[j])
						if d := math.Abs(float64(c[i*n+j]) - want); d > 1e-3*math.Max(1, math.Abs(want)) {
							t.Fatalf("%s kernel, %v, %d workers: c[%d][%d] = %g, want %g", name, sz, workers, i, j, c[i*n+j], want)
						}
					}
				}
			}
		}
		kernel = saved
	}
}

func TestPackRows(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	k, n, ld := 19, 21, 30
	s := randSlice(r, k*ld)
	p := newPacked(k, n)
	p.packRows(s, ld)
	a := []float32{1}
	for j := range n {
		var sc gemmScratch
		for kk := range k {
			c := make([]float32, n)
			row := make([]float32, k)
			row[kk] = a[0]
			gemm(c, n, row, k, 1, &p, nil, &sc, 1)
			if c[j] != s[kk*ld+j] {
				t.Fatalf("B[%d][%d] = %g, want %g", kk, j, c[j], s[kk*ld+j])
			}
		}
	}
}

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}
