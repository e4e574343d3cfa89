package lexindex

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"strconv"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// Mutation is one change of a batch: a put (add or replace) of Text
// under Ref, or, with Remove, the removal of Ref.
type Mutation struct {
	Ref    string `json:"ref"`
	Remove bool   `json:"remove,omitempty"`
	// Text is the document's whole content, UTF-8.
	Text string `json:"text,omitempty"`
	// Digest is the caller's digest of Text, stored with it; empty means
	// the hex SHA-256 of Text.
	Digest string `json:"digest,omitempty"`
	// Expect, when set, is the digest the index must hold for Ref now:
	// anything else (another digest, or no document) fails the batch with
	// fault.Conflict.
	Expect string `json:"expect_digest,omitempty"`
}

// Applied counts what a batch did.
type Applied struct {
	Added    int `json:"added"`
	Replaced int `json:"replaced"`
	// Unchanged counts puts whose digest the index already held: their
	// text is not rewritten.
	Unchanged int `json:"unchanged"`
	Removed   int `json:"removed"`
}

// Digest is the default digest of text: its hex SHA-256.
func Digest(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// Apply applies batch in order as one transaction: every mutation or
// none. Removing a ref the index does not hold is fault.NotFound.
func (ix *Index) Apply(ctx context.Context, batch []Mutation) (Applied, error) {
	for i := range batch {
		if err := checkMutation(&batch[i], i); err != nil {
			return Applied{}, err
		}
	}
	var done Applied
	err := ix.write(ctx, func(tx *txn) (err error) {
		done, err = applyBatch(tx, batch)
		return err
	})
	return done, err
}

// applyBatch applies checked mutations inside tx.
func applyBatch(tx *txn, batch []Mutation) (Applied, error) {
	var done Applied
	var ops []ftsOp
	for i, m := range batch {
		op, err := apply(tx, &done, m, i)
		if err != nil {
			return Applied{}, err
		}
		if op.id != 0 {
			ops = append(ops, op)
		}
	}
	return done, writeFTS(tx, ops)
}

// ftsOp is a change of the full-text table, made after every change of
// the documents table: a statement on another table between two FTS5
// inserts makes FTS5 flush its pending terms to disk, once per document.
type ftsOp struct {
	id     int64
	remove bool // else replace (when old) or insert text
	old    bool
	text   string
}

func writeFTS(tx *txn, ops []ftsOp) error {
	for i, op := range ops {
		if i%256 == 0 {
			if err := tx.ctx.Err(); err != nil {
				return err
			}
		}
		var err error
		switch {
		case op.remove:
			err = tx.exec(`DELETE FROM fts WHERE rowid = ?1`, op.id)
		case op.old:
			err = tx.exec(`UPDATE fts SET body = ?2 WHERE rowid = ?1`, op.id, op.text)
		default:
			err = tx.exec(`INSERT INTO fts(rowid, body) VALUES (?1, ?2)`, op.id, op.text)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func checkMutation(m *Mutation, i int) error {
	if err := checkName("ref", m.Ref); err != nil {
		fe := fault.As(err)
		return fault.New(fe.Code, "mutation %d: %s", i, fe.Message)
	}
	if m.Remove {
		if m.Text != "" || m.Digest != "" {
			return fault.New(fault.InvalidInput, "mutation %d removes %q and carries text or a digest: give one or the other", i, clip.Text(m.Ref))
		}
		return checkDigest(m.Expect, i, "expected digest", true)
	}
	switch {
	case len(m.Text) > limits.LexMaxDocumentBytes:
		return fault.LimitExceeded("document bytes of "+strconv.Quote(clip.Text(m.Ref)), limits.LexMaxDocumentBytes, int64(len(m.Text)))
	case !utf8.ValidString(m.Text):
		return fault.New(fault.InvalidInput, "mutation %d: the text of %q is not valid UTF-8", i, clip.Text(m.Ref))
	}
	if m.Digest == "" {
		m.Digest = Digest(m.Text)
	}
	if err := checkDigest(m.Digest, i, "digest", false); err != nil {
		return err
	}
	return checkDigest(m.Expect, i, "expected digest", true)
}

// checkName checks a ref or scope name: 1..limits.LexMaxRefBytes bytes of
// UTF-8 without NUL.
func checkName(what, s string) error {
	switch {
	case s == "":
		return fault.New(fault.InvalidInput, "the %s is empty", what)
	case len(s) > limits.LexMaxRefBytes:
		return fault.LimitExceeded(what+" bytes", limits.LexMaxRefBytes, int64(len(s)))
	case !utf8.ValidString(s):
		return fault.New(fault.InvalidInput, "the %s is not valid UTF-8", what)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fault.New(fault.InvalidInput, "the %s contains a NUL byte", what)
		}
	}
	return nil
}

// checkDigest checks a caller's digest: printable ASCII without spaces,
// at most limits.LexMaxDigestBytes.
func checkDigest(d string, i int, what string, optional bool) error {
	switch {
	case d == "" && optional:
		return nil
	case d == "":
		return fault.New(fault.InvalidInput, "mutation %d: the %s is empty", i, what)
	case len(d) > limits.LexMaxDigestBytes:
		return fault.LimitExceeded(what+" bytes", limits.LexMaxDigestBytes, int64(len(d)))
	}
	for j := 0; j < len(d); j++ {
		if d[j] <= ' ' || d[j] > '~' {
			return fault.New(fault.InvalidInput, "mutation %d: the %s must be printable ASCII without spaces", i, what)
		}
	}
	return nil
}

// current returns the id and digest the index holds for ref, or id 0.
func current(tx *txn, ref string) (int64, string, error) {
	var id int64
	var digest string
	err := tx.row(`SELECT id, digest FROM docs WHERE ref = ?1`, ref).Scan(&id, &digest)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", nil
	}
	return id, digest, err
}

// apply makes m's change of the documents table and returns the change
// of the full-text table it needs (id 0 for none).
func apply(tx *txn, done *Applied, m Mutation, i int) (ftsOp, error) {
	id, digest, err := current(tx, m.Ref)
	if err != nil {
		return ftsOp{}, err
	}
	if m.Expect != "" && m.Expect != digest {
		held := "no document"
		if id != 0 {
			held = "digest " + digest
		}
		return ftsOp{}, fault.New(fault.Conflict, "mutation %d: %q was expected at digest %s but the index holds %s; nothing was changed", i, clip.Text(m.Ref), clip.Text(m.Expect), clip.Text(held))
	}
	switch {
	case m.Remove && id == 0:
		return ftsOp{}, fault.New(fault.NotFound, "mutation %d: %q is not in the index; nothing was changed", i, clip.Text(m.Ref))
	case m.Remove:
		done.Removed++
		return ftsOp{id: id, remove: true}, tx.exec(`DELETE FROM docs WHERE id = ?1`, id)
	case id != 0 && digest == m.Digest:
		done.Unchanged++
		return ftsOp{}, nil
	case id != 0:
		done.Replaced++
		return ftsOp{id: id, old: true, text: m.Text}, tx.exec(`UPDATE docs SET digest = ?2, bytes = ?3 WHERE id = ?1`, id, m.Digest, len(m.Text))
	}
	done.Added++
	err = tx.row(`INSERT INTO docs(ref, digest, bytes) VALUES (?1, ?2, ?3) RETURNING id`, m.Ref, m.Digest, len(m.Text)).Scan(&id)
	return ftsOp{id: id, text: m.Text}, err
}
