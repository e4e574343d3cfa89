// Package bert is a pure-Go BERT sentence encoder for models in the
// sentence-transformers layout (config.json, tokenizer.json,
// model.safetensors, mean pooling, L2 normalisation), such as
// sentence-transformers/all-MiniLM-L6-v2.
//
// It is written here because no well-kept Go module runs these models
// without cgo or an external runtime: the known ones wrap ONNX Runtime or
// libtorch. The weights file is pinned by SHA-256 (PublishedDigest unless
// the host pins another) and read whole before use, so what was hashed is
// what runs; every shape is checked against config.json before anything is
// allocated from it. The matrix products run on a packed-panel kernel, in
// AVX2/FMA assembly on amd64 and plain Go elsewhere, split across
// GOMAXPROCS goroutines.
//
// The encoder mirrors the Hugging Face BertModel forward pass (absolute
// positions, token type 0, exact erf GELU, LayerNorm with the config's eps)
// on one unpadded sequence [CLS] pieces [SEP], then averages every
// position's output (the attention mask of one sequence is all ones) and
// normalises the mean to unit length, as sentence-transformers does.
package bert
