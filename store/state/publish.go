package state

import (
	"context"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/noreplace"
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
	sdir, sname, err := atfile.SplitParent(staging)
	if err != nil {
		return err
	}
	ddir, dname, err := atfile.SplitParent(dest)
	if err != nil {
		return err
	}
	if sdir != ddir {
		return notSameParent()
	}
	d, err := atfile.OpenDir(ddir)
	if err != nil {
		return err
	}
	defer d.Close()
	return publishAt(ctx, d, sname, dname, opts)
}

func notSameParent() *fault.Error {
	return fault.New(fault.InvalidInput, "the staging directory must be in the same parent directory as the destination")
}

func publishAt(ctx context.Context, d *atfile.Dir, staging, dest string, opts *PublishOptions) error {
	if staging == dest {
		return fault.New(fault.InvalidInput, "the staging directory and the destination are the same")
	}
	sd, _, err := d.OpenSubdir(staging, "staging directory")
	if err != nil {
		return err
	}
	defer sd.Close()
	// An early, friendly refusal; RENAME_NOREPLACE is the guarantee.
	if _, err := d.Lstat(dest, "destination"); err == nil {
		return exists()
	} else if fault.CodeOf(err) != fault.NotFound {
		return err
	}
	if opts == nil || !opts.DisableSync {
		if err := syncTree(ctx, sd); err != nil {
			return err
		}
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if err := noreplace.Rename(d.File(), staging, dest); err != nil {
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
func syncTree(ctx context.Context, sd *atfile.Dir) error {
	err := atfile.Walk(ctx, sd, atfile.WalkBounds{Names: limits.TreeHardEntries, Depth: limits.TreeHardDepth}, func(_ string, _ int, st atfile.Stat, parent *atfile.Dir, name string) (bool, error) {
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
