package bert

import (
	"runtime"
	"sync"
)

// The matrix products of the encoder are C = A·B (+ bias) with A row-major
// and B packed once into panels of panelCols columns, each panel stored
// k-major (for each k, panelCols consecutive values). A kernel computes a
// tileRows×panelCols tile of C from a packed block of tileRows rows of A and
// one panel; the amd64 kernel does it with AVX2 FMA registers, the portable
// one in plain Go.
const (
	tileRows  = 6
	panelCols = 16
	kBlock    = 256 // depth of one pass, so a panel slice stays in L1
)

// packed is a k×n matrix B in panels.
type packed struct {
	k, n int
	data []float32 // panels(n) × k × panelCols
}

func panels(n int) int { return (n + panelCols - 1) / panelCols }

func newPacked(k, n int) packed {
	return packed{k: k, n: n, data: make([]float32, panels(n)*k*panelCols)}
}

// packTransposed fills p with B = Sᵀ, where S has n rows of k values at
// stride ld (a weight matrix out×in, or the keys of one head).
func (p *packed) packTransposed(s []float32, ld int) {
	k := p.k
	for pi := range panels(p.n) {
		dst := p.data[pi*k*panelCols : (pi+1)*k*panelCols]
		for j := range panelCols {
			row := pi*panelCols + j
			if row >= p.n {
				for kk := range k {
					dst[kk*panelCols+j] = 0
				}
				continue
			}
			src := s[row*ld : row*ld+k]
			for kk, v := range src {
				dst[kk*panelCols+j] = v
			}
		}
	}
}

// packRows fills p with B = S, where S has k rows of n values at stride ld
// (the values of one head).
func (p *packed) packRows(s []float32, ld int) {
	k := p.k
	for pi := range panels(p.n) {
		dst := p.data[pi*k*panelCols : (pi+1)*k*panelCols]
		c0 := pi * panelCols
		w := min(panelCols, p.n-c0)
		for kk := range k {
			d := dst[kk*panelCols : (kk+1)*panelCols]
			copy(d, s[kk*ld+c0:kk*ld+c0+w])
			clear(d[w:])
		}
	}
}

// gemmScratch is one worker's packed rows of A.
type gemmScratch struct {
	a []float32
}

func (g *gemmScratch) grow(m int) []float32 {
	n := (m + tileRows - 1) / tileRows * tileRows * kBlock
	if cap(g.a) < n {
		g.a = make([]float32, n)
	}
	return g.a[:n]
}

// packA packs rows [0,m) of A, depth [k0,k0+kc), as tileRows-row blocks,
// each k-major, zero-padded to whole blocks.
func packA(dst []float32, a []float32, lda, m, k0, kc int) {
	for ib := 0; ib < m; ib += tileRows {
		blk := dst[ib*kc : (ib+tileRows)*kc]
		for r := range tileRows {
			if ib+r >= m {
				for kk := range kc {
					blk[kk*tileRows+r] = 0
				}
				continue
			}
			src := a[(ib+r)*lda+k0 : (ib+r)*lda+k0+kc]
			for kk, v := range src {
				blk[kk*tileRows+r] = v
			}
		}
	}
}

// gemm computes C[m×b.n] = A[m×b.k]·B + bias (bias may be nil), with the
// panels of B shared among workers goroutines.
func gemm(c []float32, ldc int, a []float32, lda, m int, b *packed, bias []float32, sc *gemmScratch, workers int) {
	np := panels(b.n)
	for k0 := 0; k0 < b.k; k0 += kBlock {
		kc := min(kBlock, b.k-k0)
		ap := sc.grow(m)
		packA(ap, a, lda, m, k0, kc)
		first := k0 == 0
		run := func(_, p0, p1 int) {
			var tile [tileRows * panelCols]float32
			for pi := p0; pi < p1; pi++ {
				bp := b.data[pi*b.k*panelCols+k0*panelCols:]
				for ib := 0; ib < m; ib += tileRows {
					kernel(kc, ap[ib*kc:], bp, &tile)
					addTile(c, ldc, &tile, ib, pi*panelCols, min(tileRows, m-ib), min(panelCols, b.n-pi*panelCols), bias, first)
				}
			}
		}
		parallel(np, workers, run)
	}
}

func addTile(c []float32, ldc int, t *[tileRows * panelCols]float32, i0, j0, rows, cols int, bias []float32, first bool) {
	for r := range rows {
		dst := c[(i0+r)*ldc+j0 : (i0+r)*ldc+j0+cols]
		src := t[r*panelCols : r*panelCols+cols]
		switch {
		case first && bias != nil:
			bb := bias[j0 : j0+cols]
			for j := range dst {
				dst[j] = src[j] + bb[j]
			}
		case first:
			copy(dst, src)
		default:
			for j := range dst {
				dst[j] += src[j]
			}
		}
	}
}

// kernelGo is the portable kernel: t = A-block · B-panel over depth k.
func kernelGo(k int, a, b []float32, t *[tileRows * panelCols]float32) {
	clear(t[:])
	a = a[:k*tileRows]
	b = b[:k*panelCols]
	for kk := range k {
		bk := (*[panelCols]float32)(b[kk*panelCols:])
		ak := a[kk*tileRows : kk*tileRows+tileRows]
		for r, av := range ak {
			row := (*[panelCols]float32)(t[r*panelCols:])
			for j := range panelCols {
				row[j] += av * bk[j]
			}
		}
	}
}

// parallel runs fn over [0,n) split into at most workers contiguous ranges.
// fn receives its worker's index, below workers.
func parallel(n, workers int, fn func(w, lo, hi int)) {
	if workers <= 1 || n <= 1 {
		fn(0, 0, n)
		return
	}
	workers = min(workers, n)
	var wg sync.WaitGroup
	for w := 1; w < workers; w++ {
		lo, hi := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(w, lo, hi)
		}()
	}
	fn(0, 0, n/workers)
	wg.Wait()
}

// defaultWorkers is how many goroutines one encoding uses.
func defaultWorkers() int { return max(1, min(runtime.GOMAXPROCS(0), runtime.NumCPU())) }
