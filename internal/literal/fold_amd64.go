package literal

import "golang.org/x/sys/cpu"

var hasAVX2 = cpu.X86.HasAVX2

// foldPairBlocks (fold_amd64.s) is foldPair over the first 32*blocks
// positions of b, 32 at a time (blocks > 0, 32*blocks+dist <= len(b)).
//
//go:noescape
func foldPairBlocks(b []byte, blocks int, w1, m1, w2, m2 byte, dist int) int

// foldPair returns the first i such that b[i]|m1 == w1 and
// b[i+dist]|m2 == w2, or -1 (dist > 0).
func foldPair(b []byte, w1, m1, w2, m2 byte, dist int) int {
	i := 0
	if blocks := (len(b) - dist) / 32; hasAVX2 && blocks > 0 {
		if j := foldPairBlocks(b, blocks, w1, m1, w2, m2, dist); j >= 0 {
			return j
		}
		i = 32 * blocks
	}
	return foldPairFrom(b, i, w1, m1, w2, m2, dist)
}
