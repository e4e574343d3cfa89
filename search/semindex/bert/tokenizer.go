package bert

import (
	"context"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"golang.org/x/text/unicode/norm"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// Tokenizer is a BERT WordPiece tokenizer as a tokenizer.json describes it:
// the BertNormalizer (clean text, CJK characters split, optional accent
// stripping and lowercasing), the BertPreTokenizer (whitespace and
// punctuation) and the WordPiece model with its continuation prefix.
//
// Unlike the tokenizers library, text that spells a special token ("[SEP]")
// is tokenized as ordinary text: a source cannot inject control tokens.
type Tokenizer struct {
	vocab     map[string]int32 // pieces that start a word
	cont      map[string]int32 // continuation pieces, prefix removed
	unk       int32
	cls, sep  int32
	maxChars  int
	lowercase bool
	strip     bool
	size      int // largest id + 1
}

// Normalizer selects the normaliser's options, for tests and for models
// whose tokenizer.json says otherwise.
type Normalizer struct {
	Lowercase    bool
	StripAccents bool
}

// Word is one pre-tokenized word: its pieces are ids[First:First+N] of the
// Tokens it belongs to, and it spans source characters [Start, End)
// (Unicode code points).
type Word struct {
	Start, End int
	First, N   int
}

// Tokens are the word pieces of a text, without [CLS] and [SEP].
type Tokens struct {
	IDs   []int32
	Words []Word
}

type tokenizerFile struct {
	Normalizer *struct {
		Type               string `json:"type"`
		CleanText          *bool  `json:"clean_text"`
		HandleChineseChars *bool  `json:"handle_chinese_chars"`
		StripAccents       *bool  `json:"strip_accents"`
		Lowercase          *bool  `json:"lowercase"`
	} `json:"normalizer"`
	PreTokenizer *struct {
		Type string `json:"type"`
	} `json:"pre_tokenizer"`
	Model struct {
		Type                    string           `json:"type"`
		UnkToken                string           `json:"unk_token"`
		ContinuingSubwordPrefix string           `json:"continuing_subword_prefix"`
		MaxInputCharsPerWord    int              `json:"max_input_chars_per_word"`
		Vocab                   map[string]int64 `json:"vocab"`
	} `json:"model"`
}

// ParseTokenizer reads a tokenizer.json. Only the BERT WordPiece pipeline
// is accepted; anything else is invalid_input naming what differs.
func ParseTokenizer(data []byte) (*Tokenizer, error) {
	if len(data) > limits.ModelMaxTokenizerBytes {
		return nil, fault.LimitExceeded("tokenizer.json bytes", limits.ModelMaxTokenizerBytes, int64(len(data)))
	}
	var f tokenizerFile
	if err := jsonv2.Unmarshal(data, &f, jsonv2.RejectUnknownMembers(false)); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "tokenizer.json is not valid JSON of the tokenizers format")
	}
	t, err := tokenizerModel(&f)
	if err != nil {
		return nil, err
	}
	if err := t.setNormalizer(&f); err != nil {
		return nil, err
	}
	if f.PreTokenizer == nil || f.PreTokenizer.Type != "BertPreTokenizer" {
		return nil, badTokenizer("pre_tokenizer must be BertPreTokenizer")
	}
	return t, nil
}

func badTokenizer(format string, args ...any) *fault.Error {
	return fault.New(fault.InvalidInput, "tokenizer.json: "+format+"; expected the BERT WordPiece tokenizer of a sentence-transformers model", args...)
}

func tokenizerModel(f *tokenizerFile) (*Tokenizer, error) {
	m := &f.Model
	if m.Type != "WordPiece" {
		return nil, badTokenizer("model type %q is not WordPiece", clip.Text(m.Type))
	}
	if len(m.Vocab) == 0 || len(m.Vocab) > limits.ModelMaxVocab {
		return nil, badTokenizer("vocabulary has %d pieces; between 1 and %d are accepted", len(m.Vocab), limits.ModelMaxVocab)
	}
	if m.MaxInputCharsPerWord < 1 || m.MaxInputCharsPerWord > limits.ModelMaxWordChars {
		return nil, badTokenizer("max_input_chars_per_word %d is outside 1..%d", m.MaxInputCharsPerWord, limits.ModelMaxWordChars)
	}
	prefix := m.ContinuingSubwordPrefix
	t := &Tokenizer{vocab: map[string]int32{}, cont: map[string]int32{}, maxChars: m.MaxInputCharsPerWord}
	for p, id := range m.Vocab {
		if id < 0 || id >= limits.ModelMaxVocab || len(p) > limits.ModelMaxPieceBytes || !utf8.ValidString(p) {
			return nil, badTokenizer("vocabulary entry %q (id %d) is out of bounds", clip.Text(p), id)
		}
		t.size = max(t.size, int(id)+1)
		if prefix != "" && len(p) > len(prefix) && p[:len(prefix)] == prefix {
			t.cont[p[len(prefix):]] = int32(id)
		} else {
			t.vocab[p] = int32(id)
		}
	}
	var ok bool
	for _, s := range []struct {
		name string
		id   *int32
	}{{m.UnkToken, &t.unk}, {"[CLS]", &t.cls}, {"[SEP]", &t.sep}} {
		if *s.id, ok = t.vocab[s.name]; !ok {
			return nil, badTokenizer("the vocabulary has no %q", clip.Text(s.name))
		}
	}
	return t, nil
}

func (t *Tokenizer) setNormalizer(f *tokenizerFile) error {
	n := f.Normalizer
	if n == nil || n.Type != "BertNormalizer" {
		return badTokenizer("normalizer must be BertNormalizer")
	}
	if n.CleanText != nil && !*n.CleanText || n.HandleChineseChars != nil && !*n.HandleChineseChars {
		return badTokenizer("normalizer must clean text and split CJK characters")
	}
	t.lowercase = n.Lowercase == nil || *n.Lowercase
	t.strip = t.lowercase
	if n.StripAccents != nil {
		t.strip = *n.StripAccents
	}
	return nil
}

// Normalizer returns the normaliser options in force.
func (t *Tokenizer) Normalizer() Normalizer {
	return Normalizer{Lowercase: t.lowercase, StripAccents: t.strip}
}

// WithNormalizer returns a copy of t using n.
func (t *Tokenizer) WithNormalizer(n Normalizer) *Tokenizer {
	c := *t
	c.lowercase, c.strip = n.Lowercase, n.StripAccents
	return &c
}

// VocabSize is the largest id plus one.
func (t *Tokenizer) VocabSize() int { return t.size }

// CLS and SEP are the ids that open and close a sequence.
func (t *Tokenizer) CLS() int32 { return t.cls }
func (t *Tokenizer) SEP() int32 { return t.sep }

// Tokenize splits text (valid UTF-8) into words and word pieces, each word
// mapped to its source characters. It observes ctx every few thousand
// characters.
func (t *Tokenizer) Tokenize(ctx context.Context, text string) (*Tokens, error) {
	if !utf8.ValidString(text) {
		return nil, fault.New(fault.InvalidInput, "text is not valid UTF-8")
	}
	w := wordSplitter{t: t, out: &Tokens{}}
	i := 0
	for _, r := range text {
		if i&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, fault.As(err)
			}
		}
		w.add(r, i)
		i++
	}
	w.flush()
	return w.out, nil
}

// wordSplitter accumulates the normalised characters of the current word.
type wordSplitter struct {
	t          *Tokenizer
	out        *Tokens
	buf        []byte // normalised word, UTF-8
	start, end int    // its source characters
	runes      int
	scratch    []rune
}

func (w *wordSplitter) add(r rune, i int) {
	switch {
	case r == 0 || r == utf8.RuneError || isControl(r):
		return
	case isWhitespace(r):
		w.flush()
		return
	case isCJK(r):
		w.flush()
		w.single(r, i)
		return
	}
	for _, c := range w.normalize(r) {
		if isPunct(c) {
			w.flush()
			w.single(c, i)
			continue
		}
		if w.runes == 0 {
			w.start = i
		}
		w.buf = utf8.AppendRune(w.buf, c)
		w.runes++
		w.end = i + 1
	}
}

// normalize is the accent stripping and lowercasing of one character.
func (w *wordSplitter) normalize(r rune) []rune {
	w.scratch = w.scratch[:0]
	if r < utf8.RuneSelf {
		if w.t.lowercase && 'A' <= r && r <= 'Z' {
			r += 'a' - 'A'
		}
		return append(w.scratch, r)
	}
	if w.t.strip {
		var b [utf8.UTFMax]byte
		n := utf8.EncodeRune(b[:], r)
		for _, c := range norm.NFD.String(string(b[:n])) {
			if !unicode.Is(unicode.Mn, c) {
				w.scratch = append(w.scratch, c)
			}
		}
	} else {
		w.scratch = append(w.scratch, r)
	}
	if !w.t.lowercase {
		return w.scratch
	}
	out := w.scratch[:0:0]
	for _, c := range w.scratch {
		if c == 'İ' { // the one unconditional one-to-many lowercase mapping
			out = append(out, 'i', '\u0307')
			continue
		}
		out = append(out, unicode.ToLower(c))
	}
	return out
}

func (w *wordSplitter) single(r rune, i int) {
	w.buf = utf8.AppendRune(w.buf[:0], r)
	w.start, w.end, w.runes = i, i+1, 1
	w.flush()
}

func (w *wordSplitter) flush() {
	if w.runes == 0 {
		return
	}
	first := len(w.out.IDs)
	w.out.IDs = w.t.appendPieces(w.out.IDs, w.buf, w.runes)
	w.out.Words = append(w.out.Words, Word{Start: w.start, End: w.end, First: first, N: len(w.out.IDs) - first})
	w.buf, w.runes = w.buf[:0], 0
}

// appendPieces is WordPiece's greedy longest match first; a word with a
// part that no piece matches, or longer than the word limit, is one [UNK].
func (t *Tokenizer) appendPieces(ids []int32, word []byte, runes int) []int32 {
	if runes > t.maxChars {
		return append(ids, t.unk)
	}
	mark := len(ids)
	for start := 0; start < len(word); {
		end := len(word)
		for end > start {
			m := t.vocab
			if start > 0 {
				m = t.cont
			}
			if id, ok := m[string(word[start:end])]; ok {
				ids = append(ids, id)
				break
			}
			_, n := utf8.DecodeLastRune(word[start:end])
			end -= n
		}
		if end == start {
			return append(ids[:mark], t.unk)
		}
		start = end
	}
	return ids
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

func isWhitespace(r rune) bool { return unicode.IsSpace(r) }

func isPunct(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 33 && r <= 47 || r >= 58 && r <= 64 || r >= 91 && r <= 96 || r >= 123 && r <= 126
	}
	return unicode.IsPunct(r)
}

func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF ||
		r >= 0x20000 && r <= 0x2A6DF || r >= 0x2A700 && r <= 0x2B73F ||
		r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B820 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
