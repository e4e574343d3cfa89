package lexindex

import (
	"context"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// RefDigest names a ref and, optionally, the caller's digest of its
// current content.
type RefDigest struct {
	Ref     string `json:"ref"`
	Current string `json:"current_digest,omitempty"`
}

// StatusRequest asks about Refs, or, when Refs is empty, lists every
// indexed ref after After in ref order.
type StatusRequest struct {
	Refs  []RefDigest
	After string
	// Limit bounds a listing, 1..limits.LexMaxStatusRefs; zero means the
	// maximum.
	Limit int
}

// DocStatus is the state of one ref.
type DocStatus struct {
	Ref     string `json:"ref"`
	Indexed bool   `json:"indexed"`
	Digest  string `json:"digest,omitempty"`
	Bytes   int64  `json:"bytes,omitempty"`
	// Stale is set when a current digest was given: true when the index
	// does not hold the ref at that digest.
	Stale *bool `json:"stale,omitempty"`
}

// Status is the answer to a StatusRequest.
type Status struct {
	// Documents is the number of documents in the whole index.
	Documents int64       `json:"documents"`
	Tokenizer string      `json:"tokenizer"`
	Refs      []DocStatus `json:"refs"`
	// Next, in a listing cut at its limit, is the After that continues it.
	Next string `json:"next,omitempty"`
}

// Status reports on refs, from one snapshot of the index.
func (ix *Index) Status(ctx context.Context, req StatusRequest) (*Status, error) {
	if len(req.Refs) > limits.LexMaxStatusRefs {
		return nil, fault.LimitExceeded("refs in one status request", limits.LexMaxStatusRefs, int64(len(req.Refs)))
	}
	limit := req.Limit
	switch {
	case limit < 0:
		return nil, fault.New(fault.InvalidInput, "limit must be positive")
	case limit > limits.LexMaxStatusRefs:
		return nil, fault.LimitExceeded("status limit", limits.LexMaxStatusRefs, int64(limit))
	case limit == 0:
		limit = limits.LexMaxStatusRefs
	}
	for _, r := range req.Refs {
		if err := checkName("ref", r.Ref); err != nil {
			return nil, err
		}
	}
	st := &Status{Tokenizer: ix.Tokenizer, Refs: []DocStatus{}}
	err := ix.read(ctx, func(tx *txn) error {
		st.Refs = st.Refs[:0]
		st.Next = ""
		if err := tx.row(`SELECT count(*) FROM docs`).Scan(&st.Documents); err != nil {
			return err
		}
		if len(req.Refs) == 0 {
			return list(tx, st, req.After, limit)
		}
		for _, r := range req.Refs {
			d := DocStatus{Ref: r.Ref}
			if err := tx.row(`SELECT digest, bytes FROM docs WHERE ref = ?1`, r.Ref).Scan(&d.Digest, &d.Bytes); err == nil {
				d.Indexed = true
			} else if !isNoRows(err) {
				return err
			}
			if r.Current != "" {
				stale := !d.Indexed || d.Digest != r.Current
				d.Stale = &stale
			}
			st.Refs = append(st.Refs, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return st, nil
}

func list(tx *txn, st *Status, after string, limit int) error {
	rows, err := tx.query(`SELECT ref, digest, bytes FROM docs WHERE ref > ?1 ORDER BY ref LIMIT ?2`, after, limit+1)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		d := DocStatus{Indexed: true}
		if err := rows.Scan(&d.Ref, &d.Digest, &d.Bytes); err != nil {
			return err
		}
		if len(st.Refs) == limit {
			st.Next = st.Refs[limit-1].Ref
			break
		}
		st.Refs = append(st.Refs, d)
	}
	return rows.Err()
}
