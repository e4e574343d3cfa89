package bert

import (
	"context"
	"fmt"
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

// TestBenchModelParity holds the encoder to torch on the MiniLM-shaped
// model bench/semantic.sh generates (CAPKIT_BENCH_BERT_MODEL, _PIN, _REF).
func TestBenchModelParity(t *testing.T) {
	refPath := os.Getenv("CAPKIT_BENCH_BERT_REF")
	if refPath == "" {
		t.Skip("run by bench/semantic.sh on a generated MiniLM-shaped model")
	}
	m, err := Load(context.Background(), os.Getenv("CAPKIT_BENCH_BERT_MODEL"), &Options{Pin: os.Getenv("CAPKIT_BENCH_BERT_PIN")})
	if err != nil {
		t.Fatal(err)
	}
	var ref []struct {
		IDs       []int32   `json:"ids"`
		Embedding []float64 `json:"embedding"`
	}
	readJSON(t, refPath, &ref)
	for _, r := range ref {
		got, err := m.Embed(context.Background(), r.IDs)
		if err != nil {
			t.Fatal(err)
		}
		checkClose(t, fmt.Sprintf("%d pieces", len(r.IDs)), got, r.Embedding)
		cos, diff := compare(got, r.Embedding)
		t.Logf("%d pieces: cosine %.8f, max abs diff %.2g", len(r.IDs), cos, diff)
	}
}
