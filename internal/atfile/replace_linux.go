//go:build linux

package atfile

import (
	"context"
	"io/fs"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/noreplace"
)

// ReplaceOptions qualify Replace. A nil *ReplaceOptions replaces
// unconditionally.
type ReplaceOptions struct {
	// Role names the target in messages; "" means "file".
	Role string
	// Mode is the permission bits of a new file; zero means 0o600. An
	// existing file keeps its own permission bits and, where the process
	// may give a file away, its owner.
	Mode fs.FileMode
	// NoReplace makes an existing target a conflict: the new content is
	// renamed into place with RENAME_NOREPLACE, so a target created
	// meanwhile is not replaced either.
	NoReplace bool
	// ReadWrite opens the staging file for reading too, for a write that
	// reads back what it wrote.
	ReadWrite bool
	// Check, when set, is called once the new content is durable, just
	// before the rename, with whether the target exists and its metadata
	// then. A non-nil error abandons the replacement and is returned.
	Check func(exists bool, cur Stat) error
}

// Replace atomically creates or replaces the regular file name in d with
// what write writes to a new staging file (see StagingPrefix): written,
// given its mode, fsynced, checked (opts.Check), renamed over name, and
// the directory fsynced. A reader or a crash sees the old content or the
// new, never a mix; a crash leaves at most a staging file, which is never
// served and which the next writer starting in d (or capkit clean)
// removes. A symlink or anything but a regular file as name is refused:
// nothing is written through a link, and a hard link is replaced, not
// written into. opts may be nil.
//
// Replacements of one file (directory identity and name) in this process
// are serialized, so opts.Check and the rename after it are atomic with
// respect to every other Replace of that file here, whichever tool makes
// it. A process writing the file directly is not held back.
func (d *Dir) Replace(ctx context.Context, name string, write func(*os.File) error, opts *ReplaceOptions) error {
	var o ReplaceOptions
	if opts != nil {
		o = *opts
	}
	if o.Role == "" {
		o.Role = "file"
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	if err := checkName(name); err != nil {
		return err
	}
	old, exists, err := d.target(name, o)
	if err != nil {
		return err
	}
	d.sweepOnce(ctx)
	tmp, tmpName, err := d.createStaging("write", o.ReadWrite)
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		tmp.Close()
		if !renamed {
			d.remove(tmpName, 0)
		}
	}()
	if err := stage(tmp, write, o, old, exists); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	st, err := Fstat(d.f)
	if err != nil {
		return err
	}
	unlock := fileLocks.lock(lockKey{dev: st.Dev, ino: st.Ino, name: name})
	defer unlock()
	if err := d.check(name, o); err != nil {
		return err
	}
	if err := d.publish(tmpName, name, o); err != nil {
		return err
	}
	renamed = true
	return d.Sync()
}

// target examines the file Replace is to replace.
func (d *Dir) target(name string, o ReplaceOptions) (Stat, bool, error) {
	st, err := d.Lstat(name, o.Role)
	switch {
	case fault.CodeOf(err) == fault.NotFound:
		return Stat{}, false, nil
	case err != nil:
		return Stat{}, false, err
	case o.NoReplace:
		return Stat{}, false, fault.New(fault.Conflict, "%s already exists; it is never replaced", o.Role)
	case !st.Mode.IsRegular():
		return Stat{}, false, NotRegular(o.Role, st.Mode)
	}
	return st, true, nil
}

// stage writes the staging file tmp and makes it durable, with its mode.
func stage(tmp *os.File, write func(*os.File) error, o ReplaceOptions, old Stat, exists bool) error {
	if err := write(tmp); err != nil {
		return Fault(err, o.Role)
	}
	mode := o.Mode
	if exists {
		mode = old.Mode.Perm()
		// Best effort: only a privileged process may give a file away.
		_ = tmp.Chown(int(old.Uid), int(old.Gid))
	}
	if err := tmp.Chmod(mode.Perm()); err != nil {
		return Fault(err, o.Role)
	}
	if err := tmp.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "%s: syncing the new content failed", o.Role)
	}
	return nil
}

// check runs o.Check on the target as it is now.
func (d *Dir) check(name string, o ReplaceOptions) error {
	if o.Check == nil {
		return nil
	}
	st, err := d.lstat(name, o.Role)
	switch {
	case fault.CodeOf(err) == fault.NotFound:
		return o.Check(false, Stat{})
	case err != nil:
		return err
	case !st.Mode.IsRegular():
		return NotRegular(o.Role, st.Mode)
	}
	return o.Check(true, st)
}

// publish renames the staging file over (or, with NoReplace, to) name.
func (d *Dir) publish(tmpName, name string, o ReplaceOptions) error {
	if !o.NoReplace {
		return d.rename(tmpName, name)
	}
	err := noreplace.Rename(d.f, tmpName, name)
	if fault.CodeOf(err) == fault.Conflict {
		return fault.New(fault.Conflict, "%s already exists; it is never replaced", o.Role)
	}
	return err
}
