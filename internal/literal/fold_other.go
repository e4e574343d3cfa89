//go:build !amd64

package literal

// foldPair returns the first i such that b[i]|m1 == w1 and
// b[i+dist]|m2 == w2, or -1 (dist > 0).
func foldPair(b []byte, w1, m1, w2, m2 byte, dist int) int {
	return foldPairFrom(b, 0, w1, m1, w2, m2, dist)
}
