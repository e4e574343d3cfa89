package bert

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"testing"
	"unicode/utf8"
)

var (
	fuzzTokOnce sync.Once
	fuzzTok     *Tokenizer
)

func fuzzTokenizer(f *testing.F) *Tokenizer {
	fuzzTokOnce.Do(func() {
		data, err := os.ReadFile(tinyDir + "/" + TokenizerFile)
		if err != nil {
			panic(err)
		}
		if fuzzTok, err = ParseTokenizer(data); err != nil {
			panic(err)
		}
	})
	return fuzzTok
}

func seedSentences(f *testing.F) {
	var ref reference
	readJSON(f, "testdata/reference.json", &ref)
	for _, s := range ref.Sentences {
		f.Add(s.Text, uint8(0))
	}
	f.Add(ref.Long.Text[:400], uint8(7))
	f.Add("İİİ ﬁ \u0301\u0301 a\u0308\u0323 \x00\t\u200b 中文", uint8(3))
}

// checkTokens asserts the invariants every tokenization keeps: words in
// order, disjoint, inside the text, each with at least one piece, and the
// pieces of the words are all the ids, in order.
func checkTokens(t *testing.T, text string, toks *Tokens, tok *Tokenizer) {
	n := utf8.RuneCountInString(text)
	next, prevEnd := 0, 0
	for _, w := range toks.Words {
		if w.Start < prevEnd || w.End <= w.Start || w.End > n || w.N < 1 || w.First != next || w.N > tok.maxChars {
			t.Fatalf("word %+v after end %d, next piece %d, %d runes", w, prevEnd, next, n)
		}
		prevEnd, next = w.End, w.First+w.N
	}
	if next != len(toks.IDs) {
		t.Fatalf("words cover %d of %d pieces", next, len(toks.IDs))
	}
	for _, id := range toks.IDs {
		if id < 0 || int(id) >= tok.VocabSize() {
			t.Fatalf("id %d outside the vocabulary", id)
		}
	}
}

func FuzzTokenize(f *testing.F) {
	seedSentences(f)
	tok := fuzzTokenizer(f)
	f.Fuzz(func(t *testing.T, text string, mode uint8) {
		if !utf8.ValidString(text) {
			if _, err := tok.Tokenize(context.Background(), text); err == nil {
				t.Fatal("invalid UTF-8 accepted")
			}
			return
		}
		tk := tok.WithNormalizer(Normalizer{Lowercase: mode&1 == 0, StripAccents: mode&2 == 0})
		toks, err := tk.Tokenize(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		checkTokens(t, text, toks, tk)
	})
}

func FuzzChunks(f *testing.F) {
	seedSentences(f)
	tok := fuzzTokenizer(f)
	f.Fuzz(func(t *testing.T, text string, max uint8) {
		if !utf8.ValidString(text) {
			return
		}
		maxPieces := tok.maxChars + int(max)
		toks, err := tok.Tokenize(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		chunks := toks.Chunks(maxPieces)
		runes := []rune(text)
		var all []int32
		prevEnd := 0
		for i, c := range chunks {
			if len(c.IDs) == 0 || len(c.IDs) > maxPieces || c.Start < prevEnd || c.End <= c.Start || c.End > len(runes) {
				t.Fatalf("chunk %d [%d,%d) of %d pieces (max %d) after %d", i, c.Start, c.End, len(c.IDs), maxPieces, prevEnd)
			}
			// A chunk's text tokenizes to exactly its pieces: no word was cut.
			again, err := tok.Tokenize(context.Background(), string(runes[c.Start:c.End]))
			if err != nil || !equalIDs(again.IDs, c.IDs) {
				b, _ := json.Marshal(string(runes[c.Start:c.End]))
				t.Fatalf("chunk %d text %s re-tokenizes to %v, chunk has %v", i, b, again.IDs, c.IDs)
			}
			if i > 0 && len(chunks[i-1].IDs)+firstWordPieces(toks, c.Start) <= maxPieces {
				t.Fatalf("chunk %d could have joined chunk %d", i, i-1)
			}
			all = append(all, c.IDs...)
			prevEnd = c.End
		}
		if !equalIDs(all, toks.IDs) {
			t.Fatal("chunks do not cover the pieces in order")
		}
	})
}

func firstWordPieces(t *Tokens, start int) int {
	for _, w := range t.Words {
		if w.Start == start {
			return w.N
		}
	}
	return 0
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
