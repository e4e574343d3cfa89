package state

import (
	"context"
	"path"
	"path/filepath"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// PublishOptions are Publish's optional settings. A nil *PublishOptions
// is valid.
type PublishOptions struct {
	// DisableSync skips fsyncing the staged tree before the rename. Use it
	// only when the caller already fsynced every staged file and
	// directory: otherwise a power loss after Publish returns can leave
	// published files empty or short. (A process crash cannot: the data is
	// in the page cache.)
	DisableSync bool
}

// Publish renames the staging directory to dest, which must not exist,
// without ever replacing anything. Both are absolute host paths in the
// same parent directory. See the package comment for the guarantees.
// opts may be nil.
func Publish(ctx context.Context, staging, dest string, opts *PublishOptions) error {
	from, err := scope.Host(staging)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := scope.Host(dest)
	if err != nil {
		return err
	}
	defer to.Close()
	if from.Name() == "/" || to.Name() == "/" {
		return fault.New(fault.InvalidInput, "path must name an entry inside a directory, not a filesystem root")
	}
	if filepath.Dir(from.Name()) != filepath.Dir(to.Name()) {
		return notSameParent()
	}
	return publish(ctx, from, to, opts)
}

// publishTool is dir_publish: staging and destination are siblings
// inside one root, neither the root itself.
func publishTool(ctx context.Context, sc *scope.Scope, in PublishArgs) error {
	from, err := sc.Resolve(in.Staging)
	if err != nil {
		return err
	}
	defer from.Close()
	to, err := sc.Resolve(in.Destination)
	if err != nil {
		return err
	}
	defer to.Close()
	for _, t := range []*scope.Target{from, to} {
		if t.Name() == "." {
			return fault.New(fault.InvalidInput, "path must name an entry inside the root, not the root itself")
		}
	}
	if from.Root() != to.Root() || path.Dir(from.Name()) != path.Dir(to.Name()) {
		return notSameParent()
	}
	return publish(ctx, from, to, nil)
}

func notSameParent() *fault.Error {
	return fault.New(fault.InvalidInput, "the staging directory must be in the same parent directory as the destination")
}

// publish renames the staged directory from to to, its sibling: both are
// checked against the protected paths first (a rename that would move or
// create one is refused), the staged tree is made durable, and the rename
// never replaces anything.
func publish(ctx context.Context, from, to *scope.Target, opts *PublishOptions) error {
	if from.Name() == to.Name() {
		return fault.New(fault.InvalidInput, "the staging directory and the destination are the same")
	}
	if err := from.CheckRename(); err != nil {
		return err
	}
	if err := to.CheckRename(); err != nil {
		return err
	}
	sd, _, err := from.OpenTree("staging directory")
	if err != nil {
		return err
	}
	defer sd.Close()
	// An early, friendly refusal; RENAME_NOREPLACE is the guarantee.
	if _, err := to.Lstat("destination"); err == nil {
		return exists()
	} else if fault.CodeOf(err) != fault.NotFound {
		return err
	}
	if opts == nil || !opts.DisableSync {
		if err := syncTree(ctx, sd); err != nil {
			return err
		}
	}
	if err := from.RenameTo(ctx, to, nil); err != nil {
		if fault.CodeOf(err) == fault.Conflict {
			return exists()
		}
		return err
	}
	return nil
}

func exists() *fault.Error {
	return fault.New(fault.Conflict, "the destination already exists; publication never replaces: choose a new name")
}

// syncTree fsyncs every regular file and directory below sd, then sd.
func syncTree(ctx context.Context, sd *scope.Dir) error {
	err := scope.Walk(ctx, sd, scope.WalkBounds{Names: limits.TreeHardEntries, Depth: limits.TreeHardDepth}, func(_ string, _ int, st scope.Stat, parent *scope.Dir, name string) (bool, error) {
		switch {
		case st.Mode.IsRegular():
			f, _, err := parent.OpenRegular(name, "staged file")
			if err != nil {
				return false, err
			}
			err = f.Sync()
			f.Close()
			if err != nil {
				return false, fault.Wrap(fault.IO, err, "syncing a staged file failed")
			}
		case st.Mode.IsDir():
			sub, _, err := parent.OpenSubdir(name, "staged directory")
			if err != nil {
				return false, err
			}
			err = sub.Sync()
			sub.Close()
			if err != nil {
				return false, err
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	return sd.Sync()
}
