package semindex

import (
	"encoding/binary"
	"math"
)

// score is the exact cosine from a dot product and a squared norm.
func score(dot, vv float32, qnorm float64) float64 {
	if vv == 0 || qnorm == 0 {
		return 0
	}
	return float64(dot) / (math.Sqrt(float64(vv)) * qnorm)
}

func dotNormBlockGo(v []byte, q []float32, out []float32) {
	stride := 4 * len(q)
	for i := range len(out) / 2 {
		out[2*i], out[2*i+1] = dotNormGo(v[i*stride:(i+1)*stride], q)
	}
}

func dotBlockGo(v []byte, q []float32, out []float32) {
	stride := 4 * len(q)
	for i := range out {
		out[i], _ = dotNormGo(v[i*stride:(i+1)*stride], q)
	}
}

func dotNormGo(v []byte, q []float32) (dot, vv float32) {
	for i, qi := range q {
		x := math.Float32frombits(binary.LittleEndian.Uint32(v[4*i:]))
		dot += x * qi
		vv += x * x
	}
	return dot, vv
}

func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decodeVector(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func norm(q []float32) float64 {
	var s float64
	for _, x := range q {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
