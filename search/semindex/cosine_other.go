//go:build !amd64

package semindex

func dotNormBlock(v []byte, q []float32, out []float32) { dotNormBlockGo(v, q, out) }

func dotBlock(v []byte, q []float32, out []float32) { dotBlockGo(v, q, out) }
