package scope

import (
	"strconv"

	"github.com/capkit/capkit/internal/atfile"
)

// Pinned is a directory held open for a library that opens files by path
// (SQLite opens a database and the files it keeps beside it): Path names
// a file in it through the descriptor, /proc/self/fd/N/name, which the
// kernel resolves to the open directory itself, wherever it has been
// renamed to and whatever has been put at its old path. A library that
// resolves symbolic links in a path itself would undo that
// (internal/sqlitepin keeps SQLite from it).
type Pinned struct {
	d    *atfile.Dir
	name string
}

// Pin holds t's directory open for t and the files beside it named by
// t's last element followed by each of suffixes (SQLite's "-wal",
// "-shm", "-journal"), once the protected paths allow a change to each,
// as spelled and as the directory is named on disk. The Pinned outlives
// t; Close it.
func (t *Target) Pin(suffixes ...string) (*Pinned, error) {
	d, base, err := t.openParent()
	if err != nil {
		return nil, err
	}
	for _, s := range append([]string{""}, suffixes...) {
		if err := t.checkOpened(d, base+s, t.name+s, writeCheck); err != nil {
			return nil, err
		}
	}
	return &Pinned{d: d.Hold(), name: base}, nil
}

// Lstat describes the pinned file, or the one beside it named with
// suffix, without following a symlink. role names it in messages.
func (p *Pinned) Lstat(suffix, role string) (Stat, error) { return p.d.Lstat(p.name+suffix, role) }

// DirStat is the pinned directory's own metadata.
func (p *Pinned) DirStat() (Stat, error) { return atfile.Fstat(p.d.File()) }

// Name is the pinned file's name in its directory.
func (p *Pinned) Name() string { return p.name }

// Path is the pinned file's path through the directory's descriptor,
// valid while p is open.
func (p *Pinned) Path() string {
	return "/proc/self/fd/" + strconv.Itoa(int(p.d.File().Fd())) + "/" + p.name
}

// Close lets go of the directory.
func (p *Pinned) Close() error { return p.d.Close() }
