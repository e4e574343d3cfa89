package tree

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// errFull stops an overview's walk once it holds what it may show.
var errFull = errors.New("overview full")

// overview lists the tree below d as an overview for a model: where list
// fails past o.MaxEntries, o.MaxDepth or maxText bytes of text, overview
// stops there and says so (Listing.Cut, Listing.Unexpanded). Directories
// at o.MaxDepth are listed but not read; the names read in all stay
// bounded by limits.TreeHardEntries, and the file bytes by o.MaxBytes (a
// sum, never shown, so still a failure).
func overview(ctx context.Context, d *scope.Dir, o Options, maxText int) (*Listing, error) {
	l := &Listing{Entries: []Entry{}}
	met, text := 0, len(l.summary())
	err := scope.Walk(ctx, d, scope.WalkBounds{Names: limits.TreeHardEntries, Depth: o.MaxDepth}, func(rel string, depth int, st scope.Stat, _ *scope.Dir, _ string) (bool, error) {
		if met++; met > o.MaxEntries {
			l.Cut = true
			return false, errFull
		}
		s := stampOf(st)
		switch s.Type {
		case Symlink:
			l.ExcludedSymlinks++
			return false, nil
		case File, Dir:
		default:
			l.ExcludedSpecial++
			return false, nil
		}
		e := Entry{Path: rel, Type: s.Type, Size: s.Size, Mode: s.Mode, ModTime: s.ModTime, ChangeTime: s.ChangeTime, Inode: s.Inode}
		if text += len(e.line()); text > maxText {
			l.Cut = true
			return false, errFull
		}
		if s.Type == File {
			l.Files++
			if l.Bytes += s.Size; l.Bytes > o.MaxBytes || l.Bytes < 0 {
				return false, errBytes(o.MaxBytes)
			}
		} else {
			l.Dirs++
			if depth >= o.MaxDepth {
				l.Unexpanded++
				l.Entries = append(l.Entries, e)
				return false, nil
			}
		}
		l.Entries = append(l.Entries, e)
		return true, nil
	})
	if err != nil && err != errFull {
		return nil, err
	}
	return l, nil
}

// line renders one entry as Listing.Text does.
func (e Entry) line() string {
	t, p := "f", e.Path
	if e.Type == Dir {
		t, p = "d", p+"/"
	}
	return fmt.Sprintf("%s %04o %d %s %s\n", t, uint32(e.Mode.Perm()), e.Size, e.ModTime.UTC().Format(time.RFC3339), p)
}

// summary is the last line of Listing.Text.
func (l *Listing) summary() string {
	s := fmt.Sprintf("%d files, %d directories, %d bytes; left out: %d symlinks, %d special files",
		l.Files, l.Dirs, l.Bytes, l.ExcludedSymlinks, l.ExcludedSpecial)
	if l.Unexpanded > 0 {
		s += fmt.Sprintf("; %d directories at the depth bound not expanded", l.Unexpanded)
	}
	if l.Cut {
		s += "; the overview stopped at its entry or output bound: list a subdirectory for the rest"
	}
	// room for the counts to grow while the walk goes on
	return s + "\n"
}
