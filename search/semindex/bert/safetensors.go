package bert

import (
	"encoding/binary"
	"math"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// tensorInfo is one entry of a safetensors header.
type tensorInfo struct {
	DType   string  `json:"dtype"`
	Shape   []int64 `json:"shape"`
	Offsets []int64 `json:"data_offsets"`
}

// safetensors is a parsed file: the header and the data section.
type safetensors struct {
	tensors map[string]tensorInfo
	data    []byte
}

var dtypeSize = map[string]int64{
	"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
	"U16": 2, "U32": 4, "U64": 8, "F8_E4M3": 1, "F8_E5M2": 1,
}

func badWeights(format string, args ...any) *fault.Error {
	return fault.New(fault.InvalidInput, "model.safetensors: "+format, args...)
}

// parseSafetensors checks the header of file: 8-byte little-endian header
// length, a JSON object of tensors, and data offsets that lie in the file,
// match their dtype and shape, and do not overlap.
func parseSafetensors(file []byte) (*safetensors, error) {
	if len(file) < 8 {
		return nil, badWeights("%d bytes is too short to be a safetensors file", len(file))
	}
	n := binary.LittleEndian.Uint64(file)
	if n > limits.ModelMaxHeaderBytes || n > uint64(len(file)-8) {
		return nil, badWeights("header length %d exceeds the file or the limit of %d bytes", n, limits.ModelMaxHeaderBytes)
	}
	raw := map[string]jsontext.Value{}
	if err := jsonv2.Unmarshal(file[8:8+n], &raw); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "model.safetensors: the header is not a JSON object")
	}
	if len(raw) > limits.ModelMaxTensors {
		return nil, badWeights("%d tensors exceed the limit of %d", len(raw), limits.ModelMaxTensors)
	}
	st := &safetensors{tensors: map[string]tensorInfo{}, data: file[8+n:]}
	type span struct{ a, b int64 }
	var spans []span
	for name, v := range raw {
		if name == "__metadata__" {
			continue
		}
		var ti tensorInfo
		if err := jsonv2.Unmarshal(v, &ti); err != nil {
			return nil, fault.Wrap(fault.InvalidInput, err, "model.safetensors: tensor %q has a malformed entry", clip.Text(name))
		}
		if err := ti.check(int64(len(st.data))); err != nil {
			return nil, badWeights("tensor %q: %s", clip.Text(name), err.Message)
		}
		st.tensors[name] = ti
		spans = append(spans, span{ti.Offsets[0], ti.Offsets[1]})
	}
	slices.SortFunc(spans, func(x, y span) int { return int(x.a - y.a) })
	for i := 1; i < len(spans); i++ {
		if spans[i].a < spans[i-1].b {
			return nil, badWeights("tensors overlap at data offset %d", spans[i].a)
		}
	}
	return st, nil
}

func (ti *tensorInfo) check(dataLen int64) *fault.Error {
	size, ok := dtypeSize[ti.DType]
	if !ok {
		return fault.New(fault.InvalidInput, "unknown dtype %q", clip.Text(ti.DType))
	}
	if len(ti.Offsets) != 2 || ti.Offsets[0] < 0 || ti.Offsets[0] > ti.Offsets[1] || ti.Offsets[1] > dataLen {
		return fault.New(fault.InvalidInput, "data offsets %v lie outside the %d data bytes", ti.Offsets, dataLen)
	}
	if len(ti.Shape) > 8 {
		return fault.New(fault.InvalidInput, "%d dimensions", len(ti.Shape))
	}
	elems := int64(1)
	for _, d := range ti.Shape {
		if d < 0 || d > 0 && elems > math.MaxInt64/8/d {
			return fault.New(fault.InvalidInput, "shape %v is out of range", ti.Shape)
		}
		elems *= d
	}
	if elems*size != ti.Offsets[1]-ti.Offsets[0] {
		return fault.New(fault.InvalidInput, "shape %v of %s needs %d bytes, the offsets give %d", ti.Shape, ti.DType, elems*size, ti.Offsets[1]-ti.Offsets[0])
	}
	return nil
}

// f32 returns tensor name as float32 values after checking that it is F32
// of exactly shape. The shape is checked before anything is allocated.
func (st *safetensors) f32(name string, shape ...int) ([]float32, error) {
	ti, ok := st.tensors[name]
	if !ok {
		ti, ok = st.tensors["bert."+name]
	}
	if !ok {
		return nil, badWeights("tensor %q is missing; a BERT model in the sentence-transformers layout has it", name)
	}
	if ti.DType != "F32" {
		return nil, badWeights("tensor %q is %s; only F32 weights are supported", name, ti.DType)
	}
	if len(ti.Shape) != len(shape) {
		return nil, badWeights("tensor %q has shape %v; config.json implies %v", name, ti.Shape, shape)
	}
	for i, d := range shape {
		if ti.Shape[i] != int64(d) {
			return nil, badWeights("tensor %q has shape %v; config.json implies %v", name, ti.Shape, shape)
		}
	}
	src := st.data[ti.Offsets[0]:ti.Offsets[1]]
	out := make([]float32, len(src)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
	}
	return out, nil
}
