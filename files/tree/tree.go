package tree

import (
	"context"
	"io/fs"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// Type is the kind of a filesystem entry.
type Type string

// The entry types.
const (
	File    Type = "file"
	Dir     Type = "dir"
	Symlink Type = "symlink"
	FIFO    Type = "fifo"
	Socket  Type = "socket"
	Device  Type = "device"
	Other   Type = "other"
)

func typeOf(m fs.FileMode) Type {
	switch {
	case m.IsRegular():
		return File
	case m.IsDir():
		return Dir
	case m&fs.ModeSymlink != 0:
		return Symlink
	case m&fs.ModeNamedPipe != 0:
		return FIFO
	case m&fs.ModeSocket != 0:
		return Socket
	case m&fs.ModeDevice != 0:
		return Device
	}
	return Other
}

// Stamp is one entry's metadata, taken without following a symlink. Two
// stamps of the same path are Equal when nothing visible to stat changed.
type Stamp struct {
	Type Type `json:"type"`
	// Size is the size in bytes (for a symlink, the length of its target).
	Size int64 `json:"size"`
	// Mode holds the permission bits and setuid, setgid and sticky bits.
	Mode       fs.FileMode `json:"mode"`
	ModTime    time.Time   `json:"mtime"`
	ChangeTime time.Time   `json:"ctime"`
	Inode      uint64      `json:"inode"`
	Device     uint64      `json:"device"`
}

func stampOf(st scope.Stat) Stamp {
	return Stamp{
		Type:       typeOf(st.Mode),
		Size:       st.Size,
		Mode:       st.Mode & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky),
		ModTime:    st.ModTime,
		ChangeTime: st.ChangeTime,
		Inode:      st.Ino,
		Device:     st.Dev,
	}
}

// Equal reports whether s and o are the same stamp.
func (s Stamp) Equal(o Stamp) bool {
	return s.Type == o.Type && s.Size == o.Size && s.Mode == o.Mode && s.ModTime.Equal(o.ModTime) &&
		s.ChangeTime.Equal(o.ChangeTime) && s.Inode == o.Inode && s.Device == o.Device
}

// StampOf returns the stamp of the entry at the absolute host path path,
// whatever its type; a symlink is stamped, not followed.
func StampOf(path string) (Stamp, error) {
	t, err := scope.Host(path)
	if err != nil {
		return Stamp{}, err
	}
	defer t.Close()
	return stampTarget(t)
}

// stampTarget stamps what t names without following a symlink.
func stampTarget(t *scope.Target) (Stamp, error) {
	st, err := t.Lstat("path")
	if err != nil {
		return Stamp{}, err
	}
	return stampOf(st), nil
}

// Options bound a walk. A nil *Options or a zero field means the default.
type Options struct {
	// MaxEntries bounds the names the walk meets, listed or excluded.
	// Zero means limits.TreeDefaultEntries; at most limits.TreeHardEntries.
	MaxEntries int
	// MaxBytes bounds the summed size of the regular files. Zero means
	// limits.TreeDefaultBytes.
	MaxBytes int64
	// MaxDepth bounds the path elements of an entry (1 for the tree's
	// children). Zero means limits.TreeDefaultDepth; at most
	// limits.TreeHardDepth.
	MaxDepth int
}

// resolved returns the options with defaults filled in, refusing values
// outside their range.
func (o *Options) resolved() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	switch {
	case r.MaxEntries < 0 || r.MaxEntries > limits.TreeHardEntries:
		return r, fault.New(fault.InvalidInput, "max entries must be 1..%d", limits.TreeHardEntries)
	case r.MaxBytes < 0:
		return r, fault.New(fault.InvalidInput, "max bytes must be positive")
	case r.MaxDepth < 0 || r.MaxDepth > limits.TreeHardDepth:
		return r, fault.New(fault.InvalidInput, "max depth must be 1..%d", limits.TreeHardDepth)
	}
	if r.MaxEntries == 0 {
		r.MaxEntries = limits.TreeDefaultEntries
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = limits.TreeDefaultBytes
	}
	if r.MaxDepth == 0 {
		r.MaxDepth = limits.TreeDefaultDepth
	}
	return r, nil
}

// Entry is one file or directory of a tree.
type Entry struct {
	// Path is slash-separated and relative to the tree's root.
	Path       string      `json:"path"`
	Type       Type        `json:"type"`
	Size       int64       `json:"size"`
	Mode       fs.FileMode `json:"mode"`
	ModTime    time.Time   `json:"mtime"`
	ChangeTime time.Time   `json:"ctime"`
	Inode      uint64      `json:"inode"`
}

// Listing is a tree's files and directories and what the walk left out.
type Listing struct {
	Entries []Entry `json:"entries"`
	Files   int     `json:"files"`
	Dirs    int     `json:"dirs"`
	// Bytes is the summed size of the regular files.
	Bytes            int64 `json:"bytes"`
	ExcludedSymlinks int   `json:"excluded_symlinks"`
	ExcludedSpecial  int   `json:"excluded_special"`
	// Cut and Unexpanded are set by an overview (tree_list) only: it
	// stopped at its entry or output bound; directories at its depth
	// bound were listed but not expanded.
	Cut        bool `json:"cut,omitempty"`
	Unexpanded int  `json:"unexpanded_dirs,omitempty"`
}

// List returns the regular files and directories below the directory at
// the absolute host path path (see the package comment for what it
// guarantees). opts may be nil.
func List(ctx context.Context, path string, opts *Options) (*Listing, error) {
	o, err := opts.resolved()
	if err != nil {
		return nil, err
	}
	t, err := scope.Host(path)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	d, _, err := t.OpenTree("directory")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return list(ctx, d, o)
}

// errBytes is the failure of a tree whose files hold more than max bytes.
func errBytes(max int64) error {
	return fault.New(fault.Limit, "the tree's files hold more than %d bytes (the limit)", max)
}

func list(ctx context.Context, d *scope.Dir, o Options) (*Listing, error) {
	l := &Listing{Entries: []Entry{}}
	err := scope.Walk(ctx, d, scope.WalkBounds{Names: o.MaxEntries, Depth: o.MaxDepth}, func(rel string, _ int, st scope.Stat, _ *scope.Dir, _ string) (bool, error) {
		s := stampOf(st)
		switch s.Type {
		case Symlink:
			l.ExcludedSymlinks++
			return false, nil
		case File:
			l.Files++
			l.Bytes += s.Size
			if l.Bytes > o.MaxBytes || l.Bytes < 0 {
				return false, errBytes(o.MaxBytes)
			}
		case Dir:
			l.Dirs++
		default:
			l.ExcludedSpecial++
			return false, nil
		}
		l.Entries = append(l.Entries, Entry{Path: rel, Type: s.Type, Size: s.Size, Mode: s.Mode,
			ModTime: s.ModTime, ChangeTime: s.ChangeTime, Inode: s.Inode})
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return l, nil
}
