//go:build !amd64

package semindex

func dotNorm(v []byte, q []float32) (dot, vv float32) { return dotNormGo(v, q) }
