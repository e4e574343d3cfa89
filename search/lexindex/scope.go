package lexindex

import (
	"context"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
)

// SetScope makes the scope name hold exactly refs (which need not be
// indexed yet), creating it if needed, in one transaction. There is no
// ceiling on a scope's size.
func (ix *Index) SetScope(ctx context.Context, name string, refs []string) error {
	if err := checkName("scope name", name); err != nil {
		return err
	}
	for _, r := range refs {
		if err := checkName("ref", r); err != nil {
			return err
		}
	}
	return ix.write(ctx, func(tx *txn) error {
		var id int64
		if err := tx.row(`INSERT INTO scopes(name) VALUES (?1) ON CONFLICT(name) DO UPDATE SET name = name RETURNING id`, name).Scan(&id); err != nil {
			return err
		}
		if err := tx.exec(`DELETE FROM scope_refs WHERE scope = ?1`, id); err != nil {
			return err
		}
		for i, r := range refs {
			if i%1024 == 0 {
				if err := tx.ctx.Err(); err != nil {
					return err
				}
			}
			if err := tx.exec(`INSERT OR IGNORE INTO scope_refs(scope, ref) VALUES (?1, ?2)`, id, r); err != nil {
				return err
			}
		}
		return nil
	})
}

// RemoveScope deletes the scope name; a missing scope is fault.NotFound.
func (ix *Index) RemoveScope(ctx context.Context, name string) error {
	if err := checkName("scope name", name); err != nil {
		return err
	}
	return ix.write(ctx, func(tx *txn) error {
		if err := tx.exec(`DELETE FROM scopes WHERE name = ?1`, name); err != nil {
			return err
		}
		var n int
		if err := tx.row(`SELECT changes()`).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return fault.New(fault.NotFound, "no scope named %q", clip.Text(name))
		}
		return nil
	})
}

// scopeID returns the id of the scope name, or fault.NotFound.
func scopeID(tx *txn, name string) (int64, error) {
	var id int64
	err := tx.row(`SELECT id FROM scopes WHERE name = ?1`, name).Scan(&id)
	if isNoRows(err) {
		return 0, fault.New(fault.NotFound, "no scope named %q: create it first", clip.Text(name))
	}
	return id, err
}
