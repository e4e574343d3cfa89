package semindex

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/semindex/bert"
)

// AddOptions qualify Add. A nil *AddOptions is valid.
type AddOptions struct {
	// Digest is the caller's current digest of the source; empty means
	// TextDigest(text).
	Digest string
	// ExpectDigest, when set, is the digest the ref must be indexed at
	// now; anything else (including not indexed) is a conflict.
	ExpectDigest string
}

// AddResult says what Add stored.
type AddResult struct {
	Ref      string `json:"ref"`
	Digest   string `json:"digest"`
	Chunks   int    `json:"chunks"`
	Pieces   int    `json:"pieces"`
	Chars    int    `json:"chars"`
	Replaced bool   `json:"replaced"`
}

// Add indexes text (UTF-8, at most limits.SemSourceMaxBytes) under ref,
// replacing what ref held, in one transaction: after a crash the index
// holds the old or the new state of ref. The embeddings are computed before
// the transaction starts. The first Add binds the index to m's digest; a
// model with another digest is a conflict.
func (ix *Index) Add(ctx context.Context, m *bert.Model, ref, text string, opts *AddOptions) (*AddResult, error) {
	var o AddOptions
	if opts != nil {
		o = *opts
	}
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	if len(text) > limits.SemSourceMaxBytes {
		return nil, fault.LimitExceeded("source bytes", limits.SemSourceMaxBytes, int64(len(text)))
	}
	if !utf8.ValidString(text) {
		return nil, fault.New(fault.InvalidInput, "the source is not valid UTF-8 text; nothing was indexed")
	}
	if o.Digest == "" {
		o.Digest = TextDigest(text)
	}
	if err := checkDigest(o.Digest); err != nil {
		return nil, err
	}
	if err := ix.checkModel(ctx, m); err != nil {
		return nil, err
	}
	chunks, vecs, err := embedSource(ctx, m, text)
	if err != nil {
		return nil, err
	}
	res := &AddResult{Ref: ref, Digest: o.Digest, Chunks: len(chunks), Chars: utf8.RuneCountInString(text)}
	for _, c := range chunks {
		res.Pieces += len(c.IDs)
	}
	err = ix.write(ctx, func(tx *sql.Tx) error {
		if err := bindModel(ctx, tx, m); err != nil {
			return err
		}
		id, prev, err := lookupRef(ctx, tx, ref)
		if err != nil {
			return err
		}
		if o.ExpectDigest != "" && prev != o.ExpectDigest {
			return expectFailed(ref, o.ExpectDigest, prev)
		}
		res.Replaced = id != 0
		return storeRef(ctx, tx, id, ref, text, res, chunks, vecs)
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

func expectFailed(ref, want, got string) error {
	if got == "" {
		return fault.New(fault.Conflict, "ref %q is not indexed, but digest %q was expected; nothing changed", clip.Text(ref), clip.Text(want))
	}
	return fault.New(fault.Conflict, "ref %q is indexed at digest %q, not the expected %q; nothing changed", clip.Text(ref), clip.Text(got), clip.Text(want))
}

// embedSource chunks text and embeds every chunk, observing ctx.
func embedSource(ctx context.Context, m *bert.Model, text string) ([]bert.Chunk, [][]float32, error) {
	toks, err := m.Tokenizer().Tokenize(ctx, text)
	if err != nil {
		return nil, nil, err
	}
	chunks := toks.Chunks(m.MaxPieces())
	vecs := make([][]float32, len(chunks))
	for i, c := range chunks {
		if vecs[i], err = m.Embed(ctx, c.IDs); err != nil {
			return nil, nil, err
		}
	}
	return chunks, vecs, nil
}

func lookupRef(ctx context.Context, tx *sql.Tx, ref string) (id int64, digest string, err error) {
	err = tx.QueryRowContext(ctx, `SELECT id, digest FROM refs WHERE ref = ?`, ref).Scan(&id, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return id, digest, dbFault(err, "reading the ref")
}

func storeRef(ctx context.Context, tx *sql.Tx, id int64, ref, text string, res *AddResult, chunks []bert.Chunk, vecs [][]float32) error {
	if id != 0 {
		if err := deleteRef(ctx, tx, id); err != nil {
			return err
		}
	}
	r, err := tx.ExecContext(ctx, `INSERT INTO refs(ref, digest, text_sha256, chars, chunks) VALUES(?, ?, ?, ?, ?)`,
		ref, res.Digest, TextDigest(text), res.Chars, len(chunks))
	if err != nil {
		return dbFault(err, "storing the ref")
	}
	if id, err = r.LastInsertId(); err != nil {
		return dbFault(err, "storing the ref")
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO sources(ref_id, text) VALUES(?, ?)`, id, text); err != nil {
		return dbFault(err, "storing the source")
	}
	rows := make([]chunkRow, len(chunks))
	for i, c := range chunks {
		rows[i] = chunkRow{start: c.Start, end: c.End, pieces: len(c.IDs), vec: vecs[i]}
	}
	return storeChunks(ctx, tx, id, rows)
}

// Remove deletes ref and its chunks; expectDigest, when set, must be the
// digest ref is indexed at. Removing a ref that is not indexed is
// not_found.
func (ix *Index) Remove(ctx context.Context, ref, expectDigest string) error {
	if err := checkRef(ref); err != nil {
		return err
	}
	return ix.write(ctx, func(tx *sql.Tx) error {
		id, prev, err := lookupRef(ctx, tx, ref)
		if err != nil {
			return err
		}
		if expectDigest != "" && prev != expectDigest {
			return expectFailed(ref, expectDigest, prev)
		}
		if id == 0 {
			return fault.New(fault.NotFound, "ref %q is not indexed", clip.Text(ref))
		}
		return deleteRef(ctx, tx, id)
	})
}

// deleteRef removes ref id, its chunks and their vectors.
func deleteRef(ctx context.Context, tx *sql.Tx, id int64) error {
	if err := removeVectors(ctx, tx, id); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM refs WHERE id = ?`, id)
	return dbFault(err, "removing the ref")
}

// checkModel refuses a model other than the one the index was built with.
func (ix *Index) checkModel(ctx context.Context, m *bert.Model) error {
	d, err := metaValue(ctx, ix.db, "model_digest")
	if err != nil {
		return err
	}
	return modelMatches(d, m)
}

func modelMatches(indexed string, m *bert.Model) error {
	if indexed != "" && indexed != m.Digest() {
		return fault.New(fault.Conflict, "the index was built with the model whose weights have SHA-256 %s; the model given has %s: use that model, or a new index", indexed, m.Digest())
	}
	return nil
}

func bindModel(ctx context.Context, tx *sql.Tx, m *bert.Model) error {
	d, err := metaValue(ctx, tx, "model_digest")
	if err != nil {
		return err
	}
	if err := modelMatches(d, m); err != nil || d != "" {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES('model_digest', ?), ('dim', ?)`, m.Digest(), fmt.Sprint(m.Dim()))
	return dbFault(err, "recording the model")
}
