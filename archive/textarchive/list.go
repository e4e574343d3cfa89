package textarchive

import (
	"context"
	"database/sql"
	"errors"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// ListQuery selects a window of a collection's items, in name order.
type ListQuery struct {
	Collection string
	// Limit is 1..limits.ArchiveMaxRecords; zero means
	// limits.ArchiveDefaultRecords.
	Limit  int
	Offset int
}

// Listing is a window of a collection's items, each with its current
// version.
type Listing struct {
	Collection string     `json:"collection"`
	Items      []ItemInfo `json:"items"`
	// Total counts the collection's items.
	Total  int64 `json:"total"`
	Offset int   `json:"offset,omitzero"`
	// NextOffset is the offset of the next window; 0 when this one
	// reaches the last item.
	NextOffset int `json:"next_offset,omitzero"`
}

// ItemInfo is one item: how many versions it has and its current one.
type ItemInfo struct {
	Item     string      `json:"item"`
	Versions int64       `json:"versions"`
	Current  VersionInfo `json:"current"`
}

// VersionsQuery selects a window of an item's versions, oldest first.
type VersionsQuery struct {
	Collection, Item string
	Limit, Offset    int
}

// VersionList is a window of an item's versions. Every version stays
// citable after newer ones.
type VersionList struct {
	Collection string        `json:"collection"`
	Item       string        `json:"item"`
	Versions   []VersionInfo `json:"versions"`
	Total      int64         `json:"total"`
	Offset     int           `json:"offset,omitzero"`
	NextOffset int           `json:"next_offset,omitzero"`
}

// window checks a limit and an offset and returns the limit to use.
func window(limit, offset, maxOffset int) (int, error) {
	switch {
	case limit < 0:
		return 0, fault.New(fault.InvalidInput, "limit must not be negative")
	case limit > limits.ArchiveMaxRecords:
		return 0, fault.LimitExceeded("limit", limits.ArchiveMaxRecords, int64(limit))
	case offset < 0:
		return 0, fault.New(fault.InvalidInput, "offset must not be negative")
	case offset > maxOffset:
		return 0, fault.LimitExceeded("offset", int64(maxOffset), int64(offset))
	case limit == 0:
		return limits.ArchiveDefaultRecords, nil
	}
	return limit, nil
}

func next(offset, shown int, total int64) int {
	if int64(offset+shown) < total {
		return offset + shown
	}
	return 0
}

// List returns a window of q.Collection's items.
func (a *Archive) List(ctx context.Context, q ListQuery) (*Listing, error) {
	if err := checkCollection(q.Collection); err != nil {
		return nil, err
	}
	limit, err := window(q.Limit, q.Offset, limits.ArchiveMaxListOffset)
	if err != nil {
		return nil, err
	}
	out := &Listing{Collection: q.Collection, Items: []ItemInfo{}, Offset: q.Offset}
	err = a.locked(func() error {
		return a.read(ctx, "listing the archive", func(t *txn) error {
			cid, err := collectionID(t, q.Collection)
			if err != nil {
				return err
			}
			if err := t.row(`SELECT count(*) FROM items WHERE collection = ?1`, cid).Scan(&out.Total); err != nil {
				return err
			}
			rows, err := t.query(`SELECT name, versions, current FROM items WHERE collection = ?1 ORDER BY name LIMIT ?2 OFFSET ?3`, cid, limit, q.Offset)
			if err != nil {
				return err
			}
			var items []ItemInfo
			var currents []int64
			for rows.Next() {
				var it ItemInfo
				var cur int64
				if err := rows.Scan(&it.Item, &it.Versions, &cur); err != nil {
					rows.Close()
					return err
				}
				items, currents = append(items, it), append(currents, cur)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for i := range items {
				v, err := versionInfo(t, currents[i])
				if err != nil {
					return err
				}
				items[i].Current = *v
			}
			out.Items = append(out.Items, items...)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out.NextOffset = next(q.Offset, len(out.Items), out.Total)
	return out, nil
}

func collectionID(t *txn, name string) (int64, error) {
	var id int64
	err := t.row(`SELECT id FROM collections WHERE name = ?1`, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fault.New(fault.NotFound, "the archive has no collection %q", clip.Text(name))
	}
	return id, err
}

func itemID(t *txn, collection, item string) (int64, error) {
	cid, err := collectionID(t, collection)
	if err != nil {
		return 0, err
	}
	var id int64
	err = t.row(`SELECT id FROM items WHERE collection = ?1 AND name = ?2`, cid, item).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fault.New(fault.NotFound, "collection %q has no item %q", clip.Text(collection), clip.Text(item))
	}
	return id, err
}

// Versions returns a window of an item's versions, oldest first.
func (a *Archive) Versions(ctx context.Context, q VersionsQuery) (*VersionList, error) {
	if err := checkCollection(q.Collection); err != nil {
		return nil, err
	}
	if err := checkItem(q.Item); err != nil {
		return nil, err
	}
	limit, err := window(q.Limit, q.Offset, limits.ArchiveMaxListOffset)
	if err != nil {
		return nil, err
	}
	out := &VersionList{Collection: q.Collection, Item: q.Item, Versions: []VersionInfo{}, Offset: q.Offset}
	err = a.locked(func() error {
		return a.read(ctx, "listing versions", func(t *txn) error {
			id, err := itemID(t, q.Collection, q.Item)
			if err != nil {
				return err
			}
			if err := t.row(`SELECT versions FROM items WHERE id = ?1`, id).Scan(&out.Total); err != nil {
				return err
			}
			rows, err := t.query(`SELECT id FROM versions WHERE item = ?1 ORDER BY seq LIMIT ?2 OFFSET ?3`, id, limit, q.Offset)
			if err != nil {
				return err
			}
			var ids []int64
			for rows.Next() {
				var v int64
				if err := rows.Scan(&v); err != nil {
					rows.Close()
					return err
				}
				ids = append(ids, v)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
			for _, v := range ids {
				info, err := versionInfo(t, v)
				if err != nil {
					return err
				}
				out.Versions = append(out.Versions, *info)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	out.NextOffset = next(q.Offset, len(out.Versions), out.Total)
	return out, nil
}

// Version describes one version by its name ("v12").
func (a *Archive) Version(ctx context.Context, version string) (*VersionInfo, error) {
	id, err := parseVersionRef(version)
	if err != nil {
		return nil, err
	}
	var out *VersionInfo
	err = a.locked(func() error {
		return a.read(ctx, "reading a version", func(t *txn) (err error) {
			out, err = versionInfo(t, id)
			return err
		})
	})
	return out, err
}
