package bert

import (
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// Config is the part of a BERT config.json the encoder uses.
type Config struct {
	ModelType             string  `json:"model_type"`
	HiddenAct             string  `json:"hidden_act"`
	PositionEmbeddingType string  `json:"position_embedding_type"`
	Hidden                int     `json:"hidden_size"`
	Layers                int     `json:"num_hidden_layers"`
	Heads                 int     `json:"num_attention_heads"`
	Intermediate          int     `json:"intermediate_size"`
	Positions             int     `json:"max_position_embeddings"`
	TypeVocab             int     `json:"type_vocab_size"`
	Vocab                 int     `json:"vocab_size"`
	LayerNormEps          float64 `json:"layer_norm_eps"`
}

func badConfig(format string, args ...any) *fault.Error {
	return fault.New(fault.InvalidInput, "config.json: "+format, args...)
}

// ParseConfig reads and bounds a config.json: every size that later sizes
// an allocation is checked here.
func ParseConfig(data []byte) (*Config, error) {
	if len(data) > limits.ModelMaxConfigBytes {
		return nil, fault.LimitExceeded("config.json bytes", limits.ModelMaxConfigBytes, int64(len(data)))
	}
	var c Config
	if err := jsonv2.Unmarshal(data, &c); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "config.json is not a valid BERT configuration")
	}
	if c.ModelType != "bert" {
		return nil, badConfig("model_type %q is not bert", clip.Text(c.ModelType))
	}
	if c.HiddenAct != "gelu" {
		return nil, badConfig("hidden_act %q is not supported; only gelu (exact erf form)", clip.Text(c.HiddenAct))
	}
	if c.PositionEmbeddingType != "" && c.PositionEmbeddingType != "absolute" {
		return nil, badConfig("position_embedding_type %q is not supported; only absolute", clip.Text(c.PositionEmbeddingType))
	}
	for _, b := range []struct {
		name     string
		v, lo, h int
	}{
		{"hidden_size", c.Hidden, 1, limits.ModelMaxHidden},
		{"num_hidden_layers", c.Layers, 1, limits.ModelMaxLayers},
		{"num_attention_heads", c.Heads, 1, limits.ModelMaxHeads},
		{"intermediate_size", c.Intermediate, 1, limits.ModelMaxIntermediate},
		{"max_position_embeddings", c.Positions, 3, limits.ModelMaxPositions},
		{"type_vocab_size", c.TypeVocab, 1, limits.ModelMaxTypeVocab},
		{"vocab_size", c.Vocab, 1, limits.ModelMaxVocab},
	} {
		if b.v < b.lo || b.v > b.h {
			return nil, badConfig("%s %d is outside %d..%d", b.name, b.v, b.lo, b.h)
		}
	}
	if c.Hidden%c.Heads != 0 {
		return nil, badConfig("hidden_size %d is not a multiple of num_attention_heads %d", c.Hidden, c.Heads)
	}
	if !(c.LayerNormEps > 0 && c.LayerNormEps < 1) {
		return nil, badConfig("layer_norm_eps %g is outside (0, 1)", c.LayerNormEps)
	}
	return &c, nil
}

// poolingConfig is sentence-transformers' 1_Pooling/config.json.
type poolingConfig struct {
	Dim      int  `json:"word_embedding_dimension"`
	CLS      bool `json:"pooling_mode_cls_token"`
	Mean     bool `json:"pooling_mode_mean_tokens"`
	Max      bool `json:"pooling_mode_max_tokens"`
	MeanSqrt bool `json:"pooling_mode_mean_sqrt_len_tokens"`
}

func checkPooling(data []byte, hidden int) error {
	if len(data) > limits.ModelMaxConfigBytes {
		return fault.LimitExceeded("1_Pooling/config.json bytes", limits.ModelMaxConfigBytes, int64(len(data)))
	}
	var p poolingConfig
	if err := jsonv2.Unmarshal(data, &p); err != nil {
		return fault.Wrap(fault.InvalidInput, err, "1_Pooling/config.json is not a valid pooling configuration")
	}
	if !p.Mean || p.CLS || p.Max || p.MeanSqrt || p.Dim != hidden {
		return fault.New(fault.InvalidInput, "1_Pooling/config.json: only mean pooling over %d dimensions is supported", hidden)
	}
	return nil
}
