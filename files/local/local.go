// Package local is the local-filesystem files.Provider, built on
// internal/atfile: a root is opened as an os.Root, a name's parent
// directory through it (so no path element, "..", absolute name or symlink
// can reach outside the root), and the last element with atfile's
// no-follow, descriptor-relative calls, whatever the name says or the
// filesystem does between two calls.
//
// What it guarantees, beyond os.Root's confinement:
//   - Reads return regular files only, opened with O_NOFOLLOW|O_NONBLOCK
//     and checked again with fstat, so a FIFO, socket or device (also one
//     swapped in between the two steps) is refused, never blocked on or
//     read. A final symlink is followed (by reading it, one hop at a time,
//     at most limits.SymlinkMaxHops) only while it stays inside the root.
//   - Nothing on a pseudo-filesystem (procfs, sysfs... see atfile) is
//     read, listed, walked or written: denied, at every open and at every
//     step of a walk.
//   - Writes are atfile.Dir.Replace: the content goes to a staging file in
//     the same directory, is fsynced, then renamed over the target, and
//     the directory is fsynced. A reader or a crash sees the old content
//     or the new, never a mix. The file keeps its permission bits (and,
//     where the process may, its owner). New files get mode 0o644.
//   - Writes never follow a symlink: the target is examined without
//     following one, relative to its directory, and the rename replaces a
//     directory entry. A hard link to a file outside the root (nlink > 1)
//     is replaced by the rename, not written into.
//   - Guarded writes (files.WriteOptions.Guard) check the version and
//     rename under a lock keyed by (directory device, inode, name), shared
//     by every replacement in the process.
//   - Names in the staging namespace (files.TempPrefix) are never listed,
//     walked, read, written or moved.
//   - Protected paths (Options.Protected: .git, capkit.toml and the
//     host's entries) are never written, moved, or made as directories:
//     denied. Each change, and each missing directory made on the way
//     (atfile.MakeDirs), is checked on the directory descriptor it is made
//     through, by the name that directory has on disk, so neither a
//     symlink inside the root nor a directory swapped for one leads it
//     into a protected path. A provider call knows only its own root: a
//     root nested in it is covered when Options.Protected knows every
//     root (capability.Protected.WithRoots, as the host's set does). A
//     directory whose host path the kernel cannot name (PATH_MAX bytes
//     or longer; or no /proc) cannot be checked, so nothing is changed
//     in it: limit (unavailable without /proc).
//
// Roots are opened once per process and shared with every other tool
// (atfile.AcquireRoot): a root is the directory that was at its path when
// it was first used, checked then.
//
// What it does not guarantee: a process that writes the file directly,
// bypassing capkit, can still change it between the version check and the
// rename (there is no portable advisory lock every writer honours).
// Permission bits beyond 0o777 (setuid, setgid, sticky) are not carried
// over to the new content. Linux only (atfile).
package local

import (
	"os"
	"path/filepath"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
)

// Provider is the local-filesystem files.Provider. Use New, or the zero
// value (which protects .git and capkit.toml). It is safe for concurrent
// use.
type Provider struct {
	protected capability.Protected
}

// Options configure New. A nil *Options is valid.
type Options struct {
	// Protected are the paths the provider never changes; the zero value
	// is .git and capkit.toml in every root. When roots nest, give it
	// every root (WithRoots): a call sees only the root it is made in.
	Protected capability.Protected
}

var (
	_ files.Provider   = (*Provider)(nil)
	_ files.FileReader = (*Provider)(nil)
)

// New returns a Provider; opts may be nil.
func New(opts *Options) *Provider {
	if opts == nil {
		return &Provider{}
	}
	return &Provider{protected: opts.Protected}
}

// root returns the granted root at the absolute, cleaned host path path
// (atfile.AcquireRoot) and the function that releases it. A root that
// cannot be opened is unavailable: the host granted it.
func (p *Provider) root(path string) (*os.Root, func(), error) {
	if !filepath.IsAbs(path) || filepath.Clean(path) != path {
		return nil, nil, fault.New(fault.Internal, "root %q is not an absolute, cleaned path", path)
	}
	r, release, err := atfile.AcquireRoot(path, "root")
	if err != nil {
		if fault.CodeOf(err) == fault.Denied {
			return nil, nil, err
		}
		return nil, nil, fault.Wrap(fault.Unavailable, err, "a granted root cannot be opened")
	}
	return r, release, nil
}

// checkName refuses names a Provider never handles: empty, absolute, or
// in the staging namespace.
func checkName(name string) error {
	switch {
	case name == "" || filepath.IsAbs(name):
		return fault.New(fault.Internal, "provider name %q must be root-relative", name)
	case files.IsTempName(name):
		return atfile.Reserved(name)
	}
	return nil
}

// openParent opens the directory holding name inside r and returns it
// with name's last element.
func openParent(r *os.Root, name string) (*atfile.Dir, string, error) {
	dir, base := split(name)
	d, err := atfile.OpenDirIn(r, dir)
	if err != nil {
		return nil, "", err
	}
	return d, base, nil
}

// makeParent is openParent making the directory and its missing parents
// inside root first (atfile.MakeDirs, which makes none in a protected
// path).
func (p *Provider) makeParent(r *os.Root, root, name string) (*atfile.Dir, string, error) {
	dir, base := split(name)
	d, _, err := atfile.MakeDirs(r, []string{root}, root, dir, 0o755, p.protected.CheckWrite)
	if err != nil {
		return nil, "", err
	}
	return d, base, nil
}

func split(name string) (dir, base string) {
	dir, base = filepath.Split(name)
	if dir == "" {
		return ".", base
	}
	return filepath.Clean(dir), base
}

func join(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}
