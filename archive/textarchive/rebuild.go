package textarchive

import (
	"context"
	"encoding/json"
	"io"
	"strconv"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/fetch"
	"github.com/capkit/capkit/search/lexindex"
)

// Rebuilt says what a rebuild did.
type Rebuilt struct {
	// Repaired are the parts whose stored text was restored from a
	// verified copy: the index's (it still had the recorded SHA-256) or
	// the retained original a fetched version's text was taken from.
	Repaired []Problem `json:"repaired"`
	// Indexed counts the parts of current versions the new index holds.
	Indexed int64 `json:"indexed"`
	// Unindexed are parts of current versions left out of the index:
	// their stored text does not verify and nothing allowed repairing it.
	Unindexed []string `json:"unindexed"`
	// Audit is a full audit after the rebuild: what it could not repair
	// is still there, named.
	Audit *AuditReport `json:"audit"`
}

// Rebuild repairs what the archive's own verified copies allow, in one
// write transaction: stored text that lost its SHA-256 is taken again
// from the index's copy when that still has it, or from a fetched
// version's retained original (the same derivation gives the same text);
// then the index is made anew from the stored text of current versions
// that verifies. Nothing is ever substituted: a part no copy verifies
// stays as it is and out of the index, and blobs, manifests and the chain
// are never changed (restore those from a backup). A full audit follows.
func (a *Archive) Rebuild(ctx context.Context) (*Rebuilt, error) {
	out := &Rebuilt{Repaired: []Problem{}, Unindexed: []string{}}
	err := a.locked(func() error {
		return a.write(ctx, "rebuilding the archive", func(t *txn) error {
			if err := a.repairText(t, out); err != nil {
				return err
			}
			return a.reindexAll(t, out)
		})
	})
	if err != nil {
		return nil, err
	}
	if out.Audit, err = a.Audit(ctx, AuditOptions{}); err != nil {
		return nil, err
	}
	return out, nil
}

// repairText restores damaged parts from verified copies.
func (a *Archive) repairText(t *txn, out *Rebuilt) error {
	for after := int64(0); ; {
		au := &auditor{a: a, t: t}
		batch, err := au.versionBatch(after)
		if err != nil || len(batch) == 0 {
			return err
		}
		for i := range batch {
			if err := t.ctx.Err(); err != nil {
				return err
			}
			if err := a.repairVersion(t, &batch[i], out); err != nil {
				return err
			}
		}
		after = batch[len(batch)-1].id
	}
}

func (a *Archive) repairVersion(t *txn, v *versionRow, out *Rebuilt) error {
	parts, _, err := t.loadParts(v.id)
	if err != nil {
		return err
	}
	var derived []storedPart
	for i, p := range parts {
		if sha256String(p.Text) == p.SHA256 {
			continue
		}
		obj := "version " + versionRef(v.id) + " part " + strconv.Itoa(i)
		text, from, err := a.verifiedCopy(t, v, i, p.SHA256, &derived)
		if err != nil {
			return err
		}
		if from == "" {
			continue
		}
		if err := t.exec(`UPDATE parts SET text = ?3 WHERE version = ?1 AND idx = ?2`, v.id, i, text); err != nil {
			return err
		}
		out.Repaired = append(out.Repaired, Problem{Object: obj, Problem: "its stored text was taken again from " + from, Repairable: true})
	}
	return nil
}

// verifiedCopy finds text with the SHA-256 sha for part i of v: the
// index's copy, or the part derived again from v's retained original;
// from says which ("" for none).
func (a *Archive) verifiedCopy(t *txn, v *versionRow, i int, sha string, derived *[]storedPart) (text, from string, err error) {
	if v.current {
		_, err := a.ix.Entries(t.ctx, []string{indexRef(v.collection, v.id, i)}, func(e lexindex.Entry) error {
			if e.Digest == sha && sha256String(e.Text) == sha {
				text, from = e.Text, "the index's copy"
			}
			return nil
		})
		if err != nil || from != "" {
			return text, from, err
		}
	}
	if v.kind != KindFetch || !v.blob.Valid {
		return "", "", nil
	}
	if *derived == nil {
		if *derived, err = a.deriveAgain(t.ctx, v); err != nil || *derived == nil {
			return "", "", err
		}
	}
	if i < len(*derived) && (*derived)[i].SHA256 == sha {
		return (*derived)[i].Text, "the retained original", nil
	}
	return "", "", nil
}

// deriveAgain takes a fetched version's text from its retained original
// again; nil when the original is damaged or gives no text.
func (a *Archive) deriveAgain(ctx context.Context, v *versionRow) ([]storedPart, error) {
	var rc fetch.Receipt
	if err := json.Unmarshal([]byte(v.receipt), &rc); err != nil {
		return []storedPart{}, nil
	}
	f, _, err := a.openBlob(v.blob.String)
	if err != nil {
		return []storedPart{}, nil
	}
	defer f.Close()
	body, err := io.ReadAll(io.LimitReader(f, limits.ArchiveMaxFileBytes+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "reading blob %s failed", v.blob.String)
	}
	if sha256Hex(body) != v.blob.String {
		return []storedPart{}, nil
	}
	d, _, err := derive(ctx, body, &rc)
	if err != nil || d == nil {
		return []storedPart{}, nil
	}
	return d.measure(), nil
}

// reindexAll makes the index anew from the stored text of current
// versions that verifies.
func (a *Archive) reindexAll(t *txn, out *Rebuilt) error {
	if err := a.ix.Reset(t.ctx); err != nil {
		return err
	}
	rows, err := t.query(`SELECT v.id, c.name FROM items AS i JOIN versions AS v ON v.id = i.current
		JOIN collections AS c ON c.id = i.collection WHERE v.parts > 0 ORDER BY v.id`)
	if err != nil {
		return err
	}
	type current struct {
		id         int64
		collection string
	}
	var all []current
	for rows.Next() {
		var c current
		if err := rows.Scan(&c.id, &c.collection); err != nil {
			rows.Close()
			return err
		}
		all = append(all, c)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	var batch []lexindex.Mutation
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := a.ix.Apply(t.ctx, batch)
		out.Indexed += int64(len(batch))
		batch = batch[:0]
		return err
	}
	for _, c := range all {
		parts, _, err := t.loadParts(c.id)
		if err != nil {
			return err
		}
		for i, p := range parts {
			ref := indexRef(c.collection, c.id, i)
			if sha256String(p.Text) != p.SHA256 {
				out.Unindexed = append(out.Unindexed, ref)
				continue
			}
			batch = append(batch, lexindex.Mutation{Ref: ref, Text: p.Text, Digest: p.SHA256})
		}
		if len(batch) >= 256 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	return flush()
}
