// Package quota moves an allowance from one budget root to exactly one new
// root, possibly in the other store (SQLite to PostgreSQL when a
// deployment grows), keeping its window, counters, cooldowns and totals.
//
// Take seals a quiesced root (no open reservation) in the same transaction
// that reads it, so its accounting is final and no admission happens there
// again; the snapshot is a strict JSON document for review. Transfer
// checks the snapshot against the sealed source (an edited snapshot is an
// integrity failure: nothing is reset), records the destination at the
// source before creating it (so a snapshot can only ever go to one root),
// creates the new root (refusing one that exists), and marks the source
// transferred. A transfer interrupted at any point can be run again with
// the same snapshot and destination.
package quota

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/net/internal/policyjson"
)

// Snapshot is a sealed root's complete accounting.
type Snapshot struct {
	Format int `json:"format"`
	// ID names this snapshot at the source and at the new root.
	ID string `json:"id"`
	// Source is the sealed root: a directory, or a PostgreSQL URL without
	// its password (supply it with PGPASSWORD or a password file).
	Source string    `json:"source"`
	Taken  time.Time `json:"taken"`
	budget.Sealed
}

// Take seals the root at source and returns its snapshot. It refuses
// (conflict) a root with open reservations or one already sealed; a
// refused root stays active.
func Take(ctx context.Context, source string, opts *budget.Options) (*Snapshot, error) {
	b, err := budget.OpenExisting(ctx, source, opts)
	if err != nil {
		return nil, err
	}
	defer b.Close()
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, fault.Wrap(fault.Internal, err, "quota: no randomness for a snapshot id")
	}
	id := hex.EncodeToString(raw[:])
	sealed, err := b.Seal(ctx, id)
	if err != nil {
		return nil, err
	}
	return &Snapshot{Format: policyjson.Format, ID: id, Source: b.Locator(), Taken: time.Now().UTC(), Sealed: *sealed}, nil
}

// Encode returns the snapshot as indented JSON.
func (s *Snapshot) Encode() ([]byte, error) {
	data, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "quota: encoding the snapshot failed")
	}
	return append(data, '\n'), nil
}

// Parse reads a snapshot document strictly (unknown fields, duplicate keys
// and wrong types refused with line and column).
func Parse(ctx context.Context, data []byte) (*Snapshot, error) {
	var s Snapshot
	if err := policyjson.DecodeMax(ctx, "quota snapshot", data, limits.QuotaSnapshotMaxBytes, &s, &s.Format); err != nil {
		return nil, err
	}
	if s.ID == "" || s.Source == "" {
		return nil, fault.New(fault.InvalidInput, "quota snapshot: \"id\" and \"source\" are required")
	}
	return &s, nil
}

// Transfer creates the root dest from snap and retires snap's source.
// Failures: conflict (dest exists, the source is not sealed by snap, or
// snap went to another root), integrity (snap differs from the sealed
// source), not_found (no source).
func Transfer(ctx context.Context, snap *Snapshot, dest string, opts *budget.Options) error {
	dest, err := normalize(dest)
	if err != nil {
		return err
	}
	src, err := budget.OpenExisting(ctx, snap.Source, opts)
	if err != nil {
		return err
	}
	defer src.Close()
	sealed, recorded, err := src.Sealed(ctx, snap.ID)
	if err != nil {
		return err
	}
	if err := same(&snap.Sealed, sealed); err != nil {
		return err
	}
	if recorded != "" && recorded != dest {
		return fault.New(fault.Conflict, "quota: snapshot %s goes to %s, not %s: a snapshot goes to exactly one new root", snap.ID, recorded, dest)
	}
	if err := src.MarkTransfer(ctx, snap.ID, dest, false); err != nil {
		return err
	}
	if err := budget.Create(ctx, dest, snap.ID, sealed, opts); err != nil {
		if fault.CodeOf(err) != fault.Conflict || recorded != dest || !holds(ctx, dest, snap.ID) {
			return err
		}
		// A transfer interrupted after creating dest: finish it.
	}
	return src.MarkTransfer(ctx, snap.ID, dest, true)
}

// same refuses a snapshot whose accounting is not the sealed source's.
func same(snap, sealed *budget.Sealed) error {
	a, err1 := json.Marshal(snap)
	b, err2 := json.Marshal(sealed)
	if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
		return fault.New(fault.Integrity, "quota: the snapshot differs from the sealed source's accounting (edited?); transfer the snapshot as taken")
	}
	return nil
}

// holds reports whether the root at dest was created from snapshot id.
func holds(ctx context.Context, dest, id string) bool {
	b, err := budget.OpenExisting(ctx, dest, nil)
	if err != nil {
		return false
	}
	defer b.Close()
	st, err := b.Status(ctx)
	return err == nil && st.Snapshot == id && st.State == "active"
}

// normalize makes a directory absolute; URLs stay as given, without a
// password.
func normalize(dest string) (string, error) {
	if budget.IsPostgres(dest) {
		return budget.RedactURL(dest)
	}
	abs, err := filepath.Abs(dest)
	if err != nil {
		return "", fault.Wrap(fault.InvalidInput, err, "quota: bad destination %s", dest)
	}
	return abs, nil
}
