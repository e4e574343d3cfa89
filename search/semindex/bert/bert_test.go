package bert

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

// The fixtures of testdata/gen_fixture.py, pinned.
const (
	tinyDir    = "testdata/tiny"
	tinyDigest = "776bd478161ed9031ef3ec1a88b1ea13118c2582f02631d2ec81cfcf8e578be8"
	// minilmTokenizerDigest is the SHA-256 of all-MiniLM-L6-v2's
	// tokenizer.json as the Go module github.com/clems4ever/all-minilm-l6-v2-go
	// v0.0.9 carries it (Apache-2.0), stored gzipped.
	minilmTokenizerDigest = "da0e79933b9ed51798a3ae27893d3c5fa4a201126cef75586296df9b4d2c62a0"
)

type reference struct {
	Window    int `json:"window"`
	Sentences []struct {
		Text      string             `json:"text"`
		IDs       map[string][]int32 `json:"ids"`
		Embedding []float64          `json:"embedding"`
	} `json:"sentences"`
	Long struct {
		Text   string `json:"text"`
		Pieces int    `json:"pieces"`
		Chunks []struct {
			Start, End, Pieces int
			Embedding          []float64 `json:"embedding"`
		} `json:"chunks"`
	} `json:"long"`
}

func readJSON(t testing.TB, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func loadTiny(t testing.TB) *Model {
	t.Helper()
	m, err := Load(context.Background(), tinyDir, &Options{Pin: tinyDigest})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// close reports the cosine and the largest absolute difference.
func compare(got []float32, want []float64) (cos, maxDiff float64) {
	var dot, ng, nw float64
	for i, w := range want {
		g := float64(got[i])
		dot += g * w
		ng += g * g
		nw += w * w
		maxDiff = max(maxDiff, math.Abs(g-w))
	}
	return dot / math.Sqrt(ng*nw), maxDiff
}

func TestTokenizerMatchesReference(t *testing.T) {
	var ref reference
	readJSON(t, "testdata/reference.json", &ref)
	tok := loadTiny(t).Tokenizer()
	variants := map[string]Normalizer{
		"lower":              {Lowercase: true, StripAccents: true},
		"cased":              {},
		"lower_keep_accents": {Lowercase: true},
	}
	for name, n := range variants {
		tk := tok.WithNormalizer(n)
		for _, s := range ref.Sentences {
			got, err := tk.Tokenize(context.Background(), s.Text)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.IDs, s.IDs[name]) && !(len(got.IDs) == 0 && len(s.IDs[name]) == 0) {
				t.Errorf("%s %q:\n got %v\nwant %v", name, s.Text, got.IDs, s.IDs[name])
			}
		}
	}
}

func TestMiniLMTokenizer(t *testing.T) {
	gz, err := os.ReadFile("testdata/minilm-tokenizer.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != minilmTokenizerDigest {
		t.Fatalf("minilm tokenizer.json digest %s, pinned %s", got, minilmTokenizerDigest)
	}
	tok, err := ParseTokenizer(data)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 30522 || tok.CLS() != 101 || tok.SEP() != 102 || tok.unk != 100 {
		t.Fatalf("vocab %d cls %d sep %d unk %d", tok.VocabSize(), tok.CLS(), tok.SEP(), tok.unk)
	}
	var ids struct {
		Sentences []struct {
			Text string  `json:"text"`
			IDs  []int32 `json:"ids"`
		} `json:"sentences"`
	}
	readJSON(t, "testdata/minilm-ids.json", &ids)
	for _, s := range ids.Sentences {
		got, err := tok.Tokenize(context.Background(), s.Text)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.IDs, s.IDs) && !(len(got.IDs) == 0 && len(s.IDs) == 0) {
			t.Errorf("%q:\n got %v\nwant %v", s.Text, got.IDs, s.IDs)
		}
	}
}

func TestEncoderMatchesReference(t *testing.T) {
	var ref reference
	readJSON(t, "testdata/reference.json", &ref)
	for _, workers := range []int{1, 2, 3} {
		m, err := Load(context.Background(), tinyDir, &Options{Pin: tinyDigest, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ref.Sentences {
			got, err := m.EmbedText(context.Background(), s.Text)
			if err != nil {
				t.Fatal(err)
			}
			checkClose(t, s.Text, got, s.Embedding)
		}
	}
}

func checkClose(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%q: dim %d, want %d", what, len(got), len(want))
	}
	cos, diff := compare(got, want)
	if cos < 0.99999 || diff > 1e-4 {
		t.Errorf("%q: cosine %.7f, max abs diff %.2g", what, cos, diff)
	}
}

func TestChunksMatchReference(t *testing.T) {
	var ref reference
	readJSON(t, "testdata/reference.json", &ref)
	m := loadTiny(t)
	toks, err := m.Tokenizer().Tokenize(context.Background(), ref.Long.Text)
	if err != nil {
		t.Fatal(err)
	}
	if len(toks.IDs) != ref.Long.Pieces || len(toks.IDs) <= ref.Window {
		t.Fatalf("long text: %d pieces, reference %d (window %d)", len(toks.IDs), ref.Long.Pieces, ref.Window)
	}
	chunks := toks.Chunks(m.MaxPieces())
	if len(chunks) != len(ref.Long.Chunks) {
		t.Fatalf("%d chunks, reference %d", len(chunks), len(ref.Long.Chunks))
	}
	for i, c := range chunks {
		w := ref.Long.Chunks[i]
		if c.Start != w.Start || c.End != w.End || len(c.IDs) != w.Pieces {
			t.Errorf("chunk %d: [%d,%d) %d pieces, reference [%d,%d) %d", i, c.Start, c.End, len(c.IDs), w.Start, w.End, w.Pieces)
		}
		got, err := m.Embed(context.Background(), c.IDs)
		if err != nil {
			t.Fatal(err)
		}
		checkClose(t, "chunk", got, w.Embedding)
	}
}

func TestEmbedWindow(t *testing.T) {
	m := loadTiny(t)
	ids := make([]int32, m.MaxPieces()+1)
	for i := range ids {
		ids[i] = 40
	}
	if _, err := m.Embed(context.Background(), ids[:m.MaxPieces()]); err != nil {
		t.Fatalf("at the window: %v", err)
	}
	if _, err := m.Embed(context.Background(), ids); !errors.Is(err, fault.ErrLimit) {
		t.Fatalf("one past the window: %v, want limit", err)
	}
	if _, err := m.Embed(context.Background(), []int32{int32(m.Config().Vocab)}); !errors.Is(err, fault.ErrInvalidInput) {
		t.Fatalf("id out of vocabulary: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Embed(ctx, ids[:4]); err == nil {
		t.Fatal("canceled context: no error")
	}
}

// copyModel copies the tiny model to a temporary directory for damage.
func copyModel(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{ConfigFile, TokenizerFile, WeightsFile, PoolingFile} {
		data, err := os.ReadFile(filepath.Join(tinyDir, f))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadRefusals(t *testing.T) {
	ctx := context.Background()
	if _, err := Load(ctx, tinyDir, nil); !errors.Is(err, fault.ErrIntegrity) || !errors.Is(err, ErrModelDigest) {
		t.Errorf("default pin on another model: %v, want integrity", err)
	}
	if _, err := Load(ctx, t.TempDir(), nil); !errors.Is(err, fault.ErrUnavailable) || !errors.Is(err, ErrModelMissing) {
		t.Errorf("empty directory: %v, want unavailable", err)
	}
	if _, err := Load(ctx, tinyDir, &Options{Pin: "abc"}); !errors.Is(err, fault.ErrInvalidInput) {
		t.Errorf("bad pin: %v", err)
	}
	dir := copyModel(t)
	os.Remove(filepath.Join(dir, WeightsFile))
	_, err := Load(ctx, dir, &Options{Pin: tinyDigest})
	var fe *fault.Error
	if !errors.As(err, &fe) || fe.Code != fault.Unavailable || !bytes.Contains([]byte(fe.Message), []byte("sha256sum")) {
		t.Errorf("missing weights: %v, want unavailable saying how to check", err)
	}
	dir = copyModel(t)
	if err := os.WriteFile(filepath.Join(dir, PoolingFile), []byte(`{"word_embedding_dimension":32,"pooling_mode_cls_token":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, dir, &Options{Pin: tinyDigest}); !errors.Is(err, fault.ErrInvalidInput) {
		t.Errorf("CLS pooling: %v, want invalid_input", err)
	}
	os.Remove(filepath.Join(dir, PoolingFile))
	if _, err := Load(ctx, dir, &Options{Pin: strings.ToUpper(tinyDigest)}); err != nil {
		t.Errorf("no pooling file (mean pooling assumed): %v", err)
	}
}

// TestEncoderPortableKernel runs the reference sentences through the
// plain Go kernel that machines without AVX2/FMA use.
func TestEncoderPortableKernel(t *testing.T) {
	saved := kernel
	kernel = kernelGo
	defer func() { kernel = saved }()
	var ref reference
	readJSON(t, "testdata/reference.json", &ref)
	m := loadTiny(t)
	for _, s := range ref.Sentences[:4] {
		got, err := m.EmbedText(context.Background(), s.Text)
		if err != nil {
			t.Fatal(err)
		}
		checkClose(t, s.Text, got, s.Embedding)
	}
}
