package atfile

import (
	"errors"
	"io/fs"
	"os"
	"slices"
	"syscall"

	"github.com/capkit/capkit/fault"
)

// Sentinels carried as the cause of the faults this package returns, for
// errors.Is.
var (
	// ErrSymlink: the named entry is a symbolic link, which is never followed.
	ErrSymlink = fault.NewMark("atfile: symbolic link not followed")
	// ErrNotRegular: the named entry is not a regular file.
	ErrNotRegular = fault.NewMark("atfile: not a regular file")
	// ErrNotDir: the named entry is not a directory.
	ErrNotDir = fault.NewMark("atfile: not a directory")
	// ErrChanged: the entry changed between two looks at it.
	ErrChanged = fault.NewMark("atfile: changed while in use")
)

// NotRegular is the refusal of something that is not a regular file:
// denied for a symlink, invalid_input for anything else.
func NotRegular(role string, m fs.FileMode) *fault.Error {
	if m&fs.ModeSymlink != 0 {
		return fault.Wrap(fault.Denied, ErrSymlink, "%s is a symbolic link; symbolic links are never followed", role).By("symlinks")
	}
	return fault.Wrap(fault.InvalidInput, ErrNotRegular, "%s is %s, not a regular file", role, Kind(m))
}

// NotDir is the refusal of something that is not a directory: denied for
// a symlink, invalid_input for anything else.
func NotDir(role string, m fs.FileMode) *fault.Error {
	if m&fs.ModeSymlink != 0 {
		return fault.Wrap(fault.Denied, ErrSymlink, "%s is a symbolic link; symbolic links are never followed", role).By("symlinks")
	}
	return fault.Wrap(fault.InvalidInput, ErrNotDir, "%s is %s, not a directory", role, Kind(m))
}

// pathEscapes is the text of os.Root's refusal of a name that leads out of
// its root. os exports no sentinel for it (errPathEscapes is unexported), so
// this is the one place in capkit that recognises it; TestEscapes pins it
// against the running Go version.
const pathEscapes = "path escapes from parent"

// Escapes reports whether err is os.Root's refusal of a name that leads out
// of the root (through "..", an absolute symlink or one that climbs). The
// refusal may be wrapped in several path errors (Root.MkdirAll gives
// "mkdirat a: statat a/: path escapes from parent"), so the whole chain is
// searched.
func Escapes(err error) bool {
	var inner error
	switch e := err.(type) {
	case nil:
		return false
	case *fs.PathError:
		inner = e.Err
	case *os.LinkError:
		inner = e.Err
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), Escapes)
	default:
		return Escapes(errors.Unwrap(err))
	}
	return inner != nil && inner.Error() == pathEscapes || Escapes(inner)
}

// Fault classifies a filesystem error about the entry role ("source",
// "destination", or a root-relative name the caller gave) as a
// *fault.Error whose message names the role, never the host path (the
// cause keeps that for the trusted log). It is the one mapping from
// system and os.Root errors to fault codes: a name leading out of its
// root and a symlink where none may be followed are denied, a missing
// entry or path element not_found, an existing one conflict, exhausted
// descriptors or space unavailable. A *fault.Error passes through.
func Fault(err error, role string) *fault.Error {
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case Escapes(err):
		return fault.Wrap(fault.Denied, err, "%s leads out of the root", role).By("roots")
	case errors.Is(err, syscall.ELOOP):
		return fault.Wrap(fault.Denied, ErrSymlink.With(err), "%s is a symbolic link; symbolic links are never followed", role).By("symlinks")
	case errors.Is(err, fs.ErrNotExist):
		return fault.Wrap(fault.NotFound, err, "%s does not exist", role)
	case errors.Is(err, syscall.ENOTDIR):
		return fault.Wrap(fault.NotFound, err, "%s does not exist: an element of its path is not a directory", role)
	case errors.Is(err, fs.ErrExist), errors.Is(err, syscall.ENOTEMPTY):
		return fault.Wrap(fault.Conflict, err, "%s already exists", role)
	case errors.Is(err, fs.ErrPermission):
		return fault.Wrap(fault.Denied, err, "%s: permission denied", role).By("os:permission")
	case errors.Is(err, syscall.EROFS):
		return fault.Wrap(fault.Denied, err, "%s is on a read-only filesystem", role).By("os:read_only")
	case errors.Is(err, syscall.EISDIR):
		return fault.Wrap(fault.InvalidInput, err, "%s is a directory", role)
	case errors.Is(err, syscall.ENXIO), errors.Is(err, syscall.ENODEV):
		return fault.Wrap(fault.InvalidInput, err, "%s is not a regular file", role)
	case errors.Is(err, syscall.ENAMETOOLONG):
		return fault.Wrap(fault.InvalidInput, err, "%s: name too long", role)
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE):
		return fault.Wrap(fault.Unavailable, err, "too many open files; retry later")
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return fault.Wrap(fault.Unavailable, err, "no space left for %s; retry when space is freed", role)
	}
	return fault.Wrap(fault.IO, err, "%s: i/o failure", role)
}

// ErrPseudoFS is the cause of the refusal of an entry on a
// pseudo-filesystem (procfs, sysfs...).
var ErrPseudoFS = fault.NewMark("atfile: entry on a pseudo-filesystem")

// PseudoFS is the refusal of role, which lies on the pseudo-filesystem
// fsName.
func PseudoFS(role, fsName string) *fault.Error {
	return fault.Wrap(fault.Denied, ErrPseudoFS,
		"%s is on a %s pseudo-filesystem (kernel state, not stored files), which capkit never reads, lists or writes", role, fsName).By("pseudo_fs")
}
