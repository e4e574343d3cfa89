package bert

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func configJSON(field string, v int) string {
	f := map[string]int{
		"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
		"max_position_embeddings": 512, "type_vocab_size": 2, "vocab_size": 100,
	}
	f[field] = v
	var b strings.Builder
	b.WriteString(`{"model_type":"bert","hidden_act":"gelu","layer_norm_eps":1e-12`)
	for k, x := range f {
		fmt.Fprintf(&b, `,%q:%d`, k, x)
	}
	return b.String() + "}"
}

func TestConfigBounds(t *testing.T) {
	for _, c := range []struct {
		field string
		max   int
	}{
		{"hidden_size", limits.ModelMaxHidden}, {"num_hidden_layers", limits.ModelMaxLayers},
		{"num_attention_heads", limits.ModelMaxHeads}, {"intermediate_size", limits.ModelMaxIntermediate},
		{"max_position_embeddings", limits.ModelMaxPositions}, {"type_vocab_size", limits.ModelMaxTypeVocab},
		{"vocab_size", limits.ModelMaxVocab},
	} {
		at := configJSON(c.field, c.max)
		if c.field == "num_attention_heads" {
			at = strings.Replace(configJSON(c.field, c.max), `"hidden_size":32`, fmt.Sprintf(`"hidden_size":%d`, c.max), 1)
		}
		if _, err := ParseConfig([]byte(at)); err != nil {
			t.Errorf("%s at %d: %v", c.field, c.max, err)
		}
		if _, err := ParseConfig([]byte(configJSON(c.field, c.max+1))); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s one past: %v", c.field, err)
		}
	}
	for _, bad := range []string{
		strings.Replace(configJSON("", 0), `"gelu"`, `"gelu_new"`, 1),
		strings.Replace(configJSON("", 0), `"bert"`, `"roberta"`, 1),
		strings.Replace(configJSON("", 0), `1e-12`, `0`, 1),
		configJSON("num_attention_heads", 5),
		`{"model_type":"bert","model_type":"bert"}`,
	} {
		if _, err := ParseConfig([]byte(bad)); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", bad, err)
		}
	}
	big := []byte(configJSON("", 0) + strings.Repeat(" ", limits.ModelMaxConfigBytes))
	if _, err := ParseConfig(big); fault.CodeOf(err) != fault.Limit {
		t.Errorf("config over its byte limit: %v", err)
	}
}

func TestSafetensorsHeaderBounds(t *testing.T) {
	file := func(n uint64, header string, data int) []byte {
		b := binary.LittleEndian.AppendUint64(nil, n)
		return append(append(b, header...), make([]byte, data)...)
	}
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	overlap := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`
	if _, err := parseSafetensors(file(uint64(len(ok)), ok, 8)); err != nil {
		t.Fatal(err)
	}
	if _, err := parseSafetensors(file(uint64(len(overlap)), overlap, 8)); err == nil || !strings.Contains(err.Error(), "overlap") {
		t.Errorf("overlapping tensors: %v", err)
	}
	for name, f := range map[string][]byte{
		"short":                  {1, 2, 3},
		"header past the file":   file(1000, ok, 8),
		"header over the limit":  file(limits.ModelMaxHeaderBytes+1, ok, 8),
		"data past the file":     file(uint64(len(ok)), ok, 4),
		"shape and bytes differ": file(uint64(len(ok)), strings.Replace(ok, "[2]", "[3]", 1), 8),
		"overlap":                file(uint64(len(ok)+57), ok[:len(ok)-1]+`,"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
		"unknown dtype":          file(uint64(len(ok)), strings.Replace(ok, "F32", "Q4", 1), 8),
		"not JSON":               file(3, "{{{", 0),
	} {
		if _, err := parseSafetensors(f); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", name, err)
		}
	}
}
