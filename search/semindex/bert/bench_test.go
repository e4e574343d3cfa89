package bert

import (
	"context"
	"os"
	"testing"
)

// benchModel is the tiny fixture, or the model directory in
// CAPKIT_BENCH_BERT_MODEL pinned by CAPKIT_BENCH_BERT_PIN (bench/semantic.sh
// generates a MiniLM-shaped one).
func benchModel(b *testing.B) *Model {
	dir, pin := os.Getenv("CAPKIT_BENCH_BERT_MODEL"), os.Getenv("CAPKIT_BENCH_BERT_PIN")
	if dir == "" {
		dir, pin = tinyDir, tinyDigest
	}
	m, err := Load(context.Background(), dir, &Options{Pin: pin})
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkEncode encodes full windows; pieces/s counts [CLS] and [SEP].
func BenchmarkEncode(b *testing.B) {
	m := benchModel(b)
	ids := make([]int32, m.MaxPieces())
	for i := range ids {
		ids[i] = int32(1000 + i*7%(m.Config().Vocab-1000))
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := m.Embed(context.Background(), ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*(len(ids)+2))/b.Elapsed().Seconds(), "pieces/s")
}

func BenchmarkTokenize(b *testing.B) {
	m := benchModel(b)
	text := ""
	for len(text) < 1<<20 {
		text += "The quick brown fox jumps over the lazy dog; naïve façades, 東京, unusualwordzzz. "
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := m.Tokenizer().Tokenize(context.Background(), text); err != nil {
			b.Fatal(err)
		}
	}
}
