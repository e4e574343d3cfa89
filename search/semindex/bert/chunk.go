package bert

// Chunk is a run of whole words of a text: pieces IDs, spanning source
// characters [Start, End) (Unicode code points).
type Chunk struct {
	Start, End int
	IDs        []int32
}

// Chunks packs the words of t greedily into chunks of at most maxPieces
// word pieces each. A chunk never ends inside a word, so never inside a
// word piece: a word has at most max_input_chars_per_word pieces (a longer
// one is a single [UNK]), which is below maxPieces for the models accepted
// here; a word longer than maxPieces would still be kept whole, alone in an
// oversized chunk that the encoder then refuses rather than cuts.
func (t *Tokens) Chunks(maxPieces int) []Chunk {
	var out []Chunk
	var start, end, first, n int
	for _, w := range t.Words {
		if n > 0 && n+w.N > maxPieces {
			out = append(out, Chunk{Start: start, End: end, IDs: t.IDs[first : first+n]})
			n = 0
		}
		if n == 0 {
			start, first = w.Start, w.First
		}
		end = w.End
		n += w.N
	}
	if n > 0 {
		out = append(out, Chunk{Start: start, End: end, IDs: t.IDs[first : first+n]})
	}
	return out
}
