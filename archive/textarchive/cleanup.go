package textarchive

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/clip"
)

// What cleanup removes, and only that: staging entries of the archive's
// own directories (the root, retained/, blobs/ and its subdirectories)
// whose writer is gone, and what an operation that staged a blob and
// never committed left (its pending record, and its blob when no version
// names it). Never a version, a blob a version names, a file the archive
// did not make, or a record of a fetch. (Any writer in capkit removes
// stale staging entries of a directory it starts in, too.)

// CleanupItem is one thing a cleanup would remove.
type CleanupItem struct {
	// What is "staging" (an interrupted write's leftover) or "staged
	// blob" (a blob no version names, of an operation that did not
	// commit) or "pending record".
	What string `json:"what"`
	// Name is root-relative.
	Name  string `json:"name"`
	Bytes int64  `json:"bytes,omitzero"`

	dir     string // the directory it is in, root-relative
	stat    atfile.Stat
	pending int64
}

// CleanupPreview is what a cleanup would remove and the token that
// applies exactly that.
type CleanupPreview struct {
	Items []CleanupItem `json:"items"`
	// Token names this preview: CleanupApply with it removes these items
	// and nothing else, or refuses if the archive changed since.
	Token string `json:"token"`
}

// CleanupPreview lists what a cleanup would remove, removing nothing.
func (a *Archive) CleanupPreview(ctx context.Context) (*CleanupPreview, error) {
	var p *CleanupPreview
	err := a.locked(func() error {
		return a.read(ctx, "previewing a cleanup", func(t *txn) (err error) {
			p, err = a.preview(t)
			return err
		})
	})
	return p, err
}

// Cleaned is what a cleanup removed.
type Cleaned struct {
	Removed []CleanupItem `json:"removed"`
}

// CleanupApply removes exactly what the preview named token lists, in
// one write transaction (no operation commits meanwhile): the preview is
// made again and must have that token, else nothing is removed
// (conflict: the archive changed since, or the token is not one).
func (a *Archive) CleanupApply(ctx context.Context, token string) (*Cleaned, error) {
	out := &Cleaned{Removed: []CleanupItem{}}
	err := a.locked(func() error {
		return a.write(ctx, "cleaning up", func(t *txn) error {
			p, err := a.preview(t)
			if err != nil {
				return err
			}
			if p.Token != token {
				return fault.New(fault.Conflict, "the token %q is not the current preview's: the archive changed since, or the token was altered; nothing was removed (preview again)", clip.Text(token))
			}
			for _, it := range p.Items {
				if err := a.remove(t, it); err != nil {
					return err
				}
				out.Removed = append(out.Removed, it)
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// cleanDirs are the archive's own directories whose staging entries a
// cleanup considers.
func (a *Archive) cleanDirs() ([]string, error) {
	dirs := []string{".", keptDir, blobsDir}
	err := eachName(context.Background(), a.fs, blobsDir, func(sub string) error {
		if len(sub) == 2 && isBlobName(sub+"00000000000000000000000000000000000000000000000000000000000000") {
			dirs = append(dirs, blobsDir+"/"+sub)
		}
		return nil
	})
	return dirs, err
}

// preview lists what a cleanup would remove now and its token.
func (a *Archive) preview(t *txn) (*CleanupPreview, error) {
	p := &CleanupPreview{Items: []CleanupItem{}}
	dirs, err := a.cleanDirs()
	if err != nil {
		return nil, err
	}
	for _, rel := range dirs {
		d, err := atfile.OpenDirIn(a.fs, rel)
		if fault.CodeOf(err) == fault.NotFound {
			continue
		}
		if err != nil {
			return nil, err
		}
		stale, err := d.StaleStaging(t.ctx)
		d.Close()
		if err != nil {
			return nil, err
		}
		for _, s := range stale {
			p.Items = append(p.Items, CleanupItem{What: "staging", Name: join(rel, s.Name), Bytes: s.Stat.Size, dir: rel, stat: s.Stat})
		}
	}
	pending, err := a.stalePending(t)
	if err != nil {
		return nil, err
	}
	p.Items = append(p.Items, pending...)
	p.Token = token(a.id, p.Items)
	return p, nil
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// stalePending lists what operations that staged a blob and did not
// commit left: their records, and their blobs no version names. One whose
// staging directory a live writer holds is in progress and left alone.
func (a *Archive) stalePending(t *txn) ([]CleanupItem, error) {
	rows, err := t.query(`SELECT id, staging, blob FROM pending ORDER BY id`)
	if err != nil {
		return nil, err
	}
	type rec struct {
		id            int64
		staging, blob string
	}
	var recs []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.id, &r.staging, &r.blob); err != nil {
			rows.Close()
			return nil, err
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []CleanupItem
	for _, r := range recs {
		if live, err := a.live(r.staging); err != nil || live {
			if err != nil {
				return nil, err
			}
			continue
		}
		if isBlobName(r.blob) {
			var n int
			if err := t.row(`SELECT count(*) FROM versions WHERE blob = ?1`, r.blob).Scan(&n); err != nil {
				return nil, err
			}
			if fi, err := a.fs.Lstat(blobPath(r.blob)); err == nil && n == 0 && fi.Mode().IsRegular() {
				st := atfile.Stat{Size: fi.Size(), ModTime: fi.ModTime()}
				if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
					st.Dev, st.Ino = uint64(sys.Dev), sys.Ino
				}
				out = append(out, CleanupItem{What: "staged blob", Name: blobPath(r.blob), Bytes: fi.Size(), dir: blobsDir + "/" + r.blob[:2], stat: st, pending: r.id})
			}
		}
		out = append(out, CleanupItem{What: "pending record", Name: "pending " + strconv.FormatInt(r.id, 10) + " (" + r.blob + ")", pending: r.id})
	}
	return out, nil
}

// live reports whether the root's staging entry name is held by a live
// writer.
func (a *Archive) live(name string) (bool, error) {
	if !atfile.IsStaging(name) {
		return false, nil
	}
	if _, err := a.fs.Lstat(name); err != nil {
		return false, nil
	}
	stale, err := a.root.StaleStaging(context.Background())
	if err != nil {
		return false, err
	}
	for _, s := range stale {
		if s.Name == name {
			return false, nil
		}
	}
	return true, nil
}

// token names a preview: the SHA-256 of the archive's identity and each
// item with what identifies it on disk.
func token(archive string, items []CleanupItem) string {
	type named struct {
		What, Name       string
		Dev, Ino, Size   int64
		ModTime, Pending int64
	}
	list := make([]named, len(items))
	for i, it := range items {
		list[i] = named{it.What, it.Name, int64(it.stat.Dev), int64(it.stat.Ino), it.stat.Size, it.stat.ModTime.UnixNano(), it.pending}
	}
	data, _ := json.Marshal(struct {
		Archive string
		Items   []named
	}{archive, list})
	return "cleanup-" + sha256Hex(data)[:40]
}

// remove removes one previewed item.
func (a *Archive) remove(t *txn, it CleanupItem) error {
	switch it.What {
	case "staging":
		d, err := atfile.OpenDirIn(a.fs, it.dir)
		if err != nil {
			return err
		}
		defer d.Close()
		name := it.Name[len(it.Name)-len(baseName(it.Name)):]
		removed, err := d.RemoveStale(name, it.stat)
		if err == nil && !removed {
			err = fault.New(fault.Conflict, "%s changed while it was being removed", it.Name)
		}
		return err
	case "staged blob":
		if err := a.fs.Remove(it.Name); err != nil && !os.IsNotExist(err) {
			return atfile.Fault(err, it.Name)
		}
		return a.syncDir(it.dir)
	case "pending record":
		return t.exec(`DELETE FROM pending WHERE id = ?1`, it.pending)
	}
	return fault.New(fault.Internal, "cleanup: an item of kind %q", it.What)
}

func baseName(rel string) string {
	for i := len(rel) - 1; i >= 0; i-- {
		if rel[i] == '/' {
			return rel[i+1:]
		}
	}
	return rel
}

// Text describes a preview for a person.
func (p *CleanupPreview) Text() string {
	if len(p.Items) == 0 {
		return "nothing to clean up\ntoken " + p.Token
	}
	s := ""
	for _, it := range p.Items {
		s += fmt.Sprintf("would remove %s %s", it.What, it.Name)
		if it.Bytes > 0 {
			s += fmt.Sprintf(" (%d bytes)", it.Bytes)
		}
		s += "\n"
	}
	return s + "apply exactly this with: capkit archive cleanup DIR --apply " + p.Token
}

// Text describes a cleanup for a person.
func (c *Cleaned) Text() string {
	s := fmt.Sprintf("removed %d items", len(c.Removed))
	for _, it := range c.Removed {
		s += "\n" + it.What + " " + it.Name
	}
	return s
}
