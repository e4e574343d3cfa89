package sandbox

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/limits"
)

// The guard of a run's protected names. Landlock cannot refuse one name
// of a directory and allow the others, and a missing name has no inode to
// mount read-only, so a protected path that does not exist when the
// command starts is not kept from being made: once every process of the
// command is gone, whatever is at a protected name that was not there
// (or is not what was there) is moved out of the root into the
// quarantine. Names match as capability.Protected matches them: element
// by element, case-insensitively (.GIT is .git on a case-folding
// filesystem), below the outermost writable root holding the path, so a
// nested protected path whose directories were missing counts too. A
// walk never follows a symbolic link; a new link where a directory on the
// way to a protected path would be is moved as well, since the path would
// lead wherever it points.

// nameNode is one element of a root's protected paths.
type nameNode struct {
	elem      string
	protected bool // a protected path ends here (nothing below it is walked)
	next      []*nameNode
}

// guardRoot is a writable root and the protected names below it.
type guardRoot struct {
	dir   string
	names []*nameNode
}

// entryID is what an entry is: a new one at the same name differs (the
// birth time tells a new inode from an old number reused, the target a
// new link from an old one).
type entryID struct {
	dev, ino  uint64
	mode      uint16
	birth     unix.StatxTimestamp
	linkedTo  string
	protected bool // the entry is at a protected path, not on the way to one
}

// guard takes the protected names of a run's roots when the command
// starts and moves out what it left there when it ended.
type guard struct {
	q       *quarantine
	roots   []guardRoot
	exact   []string           // the protected paths as spelled (the helper mounts those)
	started map[string]entryID // what was at protected names at the start, by path
}

// newGuard builds the names to watch: protected paths in writable roots.
func newGuard(writable, protected []string, q *quarantine) *guard {
	g := &guard{q: q, exact: protected}
	for _, p := range protected {
		root := ""
		for _, r := range writable {
			if p != r && capability.Within(r, p) && (root == "" || len(r) < len(root)) {
				root = r
			}
		}
		if root == "" {
			continue // check refused such a spec
		}
		i := slices.IndexFunc(g.roots, func(r guardRoot) bool { return r.dir == root })
		if i < 0 {
			g.roots = append(g.roots, guardRoot{dir: root})
			i = len(g.roots) - 1
		}
		names := &g.roots[i].names
		elems := strings.Split(p[len(root)+1:], "/")
		for j, e := range elems {
			k := slices.IndexFunc(*names, func(n *nameNode) bool { return strings.EqualFold(n.elem, e) })
			if k < 0 {
				*names = append(*names, &nameNode{elem: e})
				k = len(*names) - 1
			}
			n := (*names)[k]
			if j == len(elems)-1 {
				n.protected = true
			}
			names = &n.next
		}
	}
	return g
}

// errStale is a protected path that exists but that the container does
// not hold read-only: it appeared while the container was being built.
var errStale = errors.New("a protected path changed while the container was being built")

// start records what is at the protected names now, just before the
// command runs. In full containment every protected path that exists,
// with no symbolic link on the way, must be one the helper mounted
// read-only (held): otherwise it appeared since the helper looked, and
// the view is stale.
func (g *guard) start(full bool, held []string) error {
	g.started = map[string]entryID{}
	err := g.walk(func(dir int, path, name string, id entryID) {
		g.started[path] = id
	})
	if err != nil {
		return err
	}
	if !full {
		return nil
	}
	for p, id := range g.started {
		if id.protected && id.mode != unix.S_IFLNK && slices.Contains(g.exact, p) && !slices.Contains(held, p) {
			return fmt.Errorf("%w: %s", errStale, p)
		}
	}
	return nil
}

// finish moves into the quarantine whatever is at a protected name and
// was not there when the command started; every process of the command
// is gone.
func (g *guard) finish() ([]Moved, error) {
	var moved []Moved
	err := g.walk(func(dir int, path, name string, id entryID) {
		if was, ok := g.started[path]; !ok || was != id {
			if m, gone := g.q.move(dir, name, path); !gone {
				moved = append(moved, m)
			}
		}
	})
	return moved, err
}

// walk calls visit for every entry at a protected name of each root and
// every symbolic link on the way to one, descending into the directories
// on the way (one its owner cannot read is opened by giving it its
// owner's permissions, which are then put back). A directory's matches
// are gathered before visit, which may move them, is called.
func (g *guard) walk(visit func(dir int, path, name string, id entryID)) error {
	for _, r := range g.roots {
		fd, err := unix.Open(r.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("root %s: %w", r.dir, err)
		}
		err = walkNames(fd, r.dir, r.names, visit)
		unix.Close(fd)
		if err != nil {
			return err
		}
	}
	return nil
}

func walkNames(dir int, path string, names []*nameNode, visit func(dir int, path, name string, id entryID)) error {
	type match struct {
		name string
		node *nameNode
	}
	var found []match
	err := eachName(dir, func(name string) error {
		if i := slices.IndexFunc(names, func(n *nameNode) bool { return strings.EqualFold(n.elem, name) }); i >= 0 {
			found = append(found, match{name, names[i]})
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("listing %s: %w", path, err)
	}
	for _, m := range found {
		p := path + "/" + m.name
		id, err := identify(dir, m.name)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		id.protected = m.node.protected
		switch {
		case m.node.protected || id.mode == unix.S_IFLNK:
			visit(dir, p, m.name, id)
		case id.mode == unix.S_IFDIR:
			sub, err := openDir(dir, m.name, true)
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
				continue // gone or replaced since it was listed
			}
			if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			err = walkNames(sub, p, m.node.next, visit)
			unix.Close(sub)
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// identify is what the entry name of dir is, never following a link.
func identify(dir int, name string) (entryID, error) {
	var st unix.Statx_t
	if err := unix.Statx(dir, name, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return entryID{}, err
	}
	id := entryID{dev: unix.Mkdev(st.Dev_major, st.Dev_minor), ino: st.Ino, mode: st.Mode & unix.S_IFMT}
	if st.Mask&unix.STATX_BTIME != 0 {
		id.birth = st.Btime
	}
	if id.mode == unix.S_IFLNK {
		buf := make([]byte, unix.PathMax)
		n, err := unix.Readlinkat(dir, name, buf)
		if err != nil {
			return entryID{}, err
		}
		id.linkedTo = string(buf[:n])
	}
	return id, nil
}

// quarantine is where a run moves what its command left at protected
// names: a directory of its own (made on the first move) in a base
// directory of the host's that lies in no root.
type quarantine struct {
	base  string   // the configured base, "" for the default ones (defaultBases)
	roots []string // every root of the run
	dir   int      // the run's directory, once made
	path  string
	why   error // why nothing can be kept, once known
	n     int
}

func newQuarantine(base string, roots []string) *quarantine {
	return &quarantine{base: base, roots: roots, dir: -1}
}

// defaultBases are the quarantines used when the host names none, in
// order (Options.Quarantine).
func defaultBases() []string {
	state := os.Getenv("XDG_STATE_HOME")
	if !filepath.IsAbs(state) {
		if home, err := os.UserHomeDir(); err == nil && filepath.IsAbs(home) {
			state = filepath.Join(home, ".local", "state")
		} else {
			state = ""
		}
	}
	tmp := filepath.Join(os.TempDir(), "capkit-quarantine-"+strconv.Itoa(os.Geteuid()))
	if state == "" {
		return []string{tmp}
	}
	return []string{filepath.Join(state, "capkit", "quarantine"), tmp}
}

// move moves the entry name of dir (at path) into the quarantine: renamed
// there, or copied (within limits.RunMaxQuarantineBytes and Entries) when
// the quarantine is on another filesystem; either way it leaves the root.
// gone says it had left already (a host process removed it).
func (q *quarantine) move(dir int, name, path string) (m Moved, gone bool) {
	m = Moved{Path: path}
	if err := q.open(); err != nil {
		m.Note = "removed, not kept: " + err.Error()
		return removed(m, dir, name), false
	}
	q.n++
	to := strconv.Itoa(q.n) + "-" + name
	err := renameOut(dir, name, q.dir, to)
	switch {
	case err == nil:
		m.To = q.path + "/" + to
		return m, false
	case errors.Is(err, unix.ENOENT) && !exists(dir, name):
		return m, true
	case !errors.Is(err, unix.EXDEV):
		m.Note = "removed, not kept: " + err.Error()
		return removed(m, dir, name), false
	}
	b := &copyBudget{bytes: limits.RunMaxQuarantineBytes, entries: limits.RunMaxQuarantineEntries}
	if err := copyTree(dir, name, q.dir, to, b, 0); err != nil {
		m.Note = "copied in part (" + err.Error() + ")"
	} else if b.skipped > 0 {
		m.Note = fmt.Sprintf("the quarantine is on another filesystem: %d entries were not kept (FIFOs, sockets and devices, or past %s and %s in all)",
			b.skipped, limits.Bytes(limits.RunMaxQuarantineBytes), limits.Count(limits.RunMaxQuarantineEntries)+" entries")
	}
	m.To = q.path + "/" + to
	return removed(m, dir, name), false
}

// exists reports whether dir holds the entry name (ENOENT from a rename
// may be the quarantine's, removed meanwhile).
func exists(dir int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// removed removes the entry name of dir for m, saying so if it cannot.
func removed(m Moved, dir int, name string) Moved {
	if err := removeAll(dir, name); err != nil {
		m.Note = strings.TrimPrefix(m.Note+"; ", "; ") + "it could not be removed from the root: " + err.Error()
	}
	return m
}

// renameOut renames the entry name of dir to the new entry to of q. A
// directory being moved to another must be writable (its ".." changes),
// and dir must be: a permission the command took from its owner is given
// back for the rename, then restored (on the moved entry as well).
func renameOut(dir int, name string, q int, to string) error {
	err := unix.Renameat2(dir, name, q, to, unix.RENAME_NOREPLACE)
	if !errors.Is(err, unix.EACCES) {
		return err
	}
	var parent, st unix.Stat_t
	if err := unix.Fstat(dir, &parent); err != nil {
		return err
	}
	if err := unix.Fchmod(dir, parent.Mode&0o7777|0o700); err != nil {
		return err
	}
	defer unix.Fchmod(dir, parent.Mode&0o7777)
	at, err := unix.Openat(dir, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(at)
	if err := unix.Fstat(at, &st); err != nil {
		return err
	}
	self := "/proc/self/fd/" + strconv.Itoa(at)
	if st.Mode&unix.S_IFMT == unix.S_IFDIR {
		if err := unix.Chmod(self, st.Mode&0o7777|0o200); err != nil {
			return err
		}
		defer unix.Chmod(self, st.Mode&0o7777)
	}
	return unix.Renameat2(dir, name, q, to, unix.RENAME_NOREPLACE)
}

// open makes the run's directory in the first base that lies in no root.
func (q *quarantine) open() error {
	if q.dir >= 0 || q.why != nil {
		return q.why
	}
	bases := []string{q.base}
	if q.base == "" {
		bases = defaultBases()
	}
	for _, b := range bases {
		if q.why = q.openIn(b); q.why == nil {
			return nil
		}
		if q.base != "" || !errors.Is(q.why, errInRoot) {
			break
		}
	}
	return q.why
}

var errInRoot = errors.New("the quarantine lies in a root")

// openIn makes the run's directory in base, which must be an absolute
// directory of this user's, no symbolic link at its end, in no root and
// holding none, once its links are resolved.
func (q *quarantine) openIn(base string) error {
	if !filepath.IsAbs(base) {
		return fmt.Errorf("the quarantine %q is not an absolute path", base)
	}
	if err := os.MkdirAll(base, 0o700); err != nil {
		return err
	}
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
		return fmt.Errorf("the quarantine %s is not this user's alone (owner %d, mode %o)", base, st.Uid, st.Mode&0o777)
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return err
	}
	for _, r := range q.roots {
		if capability.Within(r, real) || capability.Within(real, r) {
			return fmt.Errorf("%w: %s is in or holds root %s", errInRoot, real, r)
		}
	}
	var rnd [4]byte
	rand.Read(rnd[:])
	name := time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(rnd[:])
	if err := unix.Mkdirat(fd, name, 0o700); err != nil {
		return err
	}
	dir, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	q.dir, q.path = dir, real+"/"+name
	return nil
}

// close lets go of the run's directory, removing it if nothing was
// kept there.
func (q *quarantine) close() {
	if q.dir >= 0 {
		unix.Close(q.dir)
		q.dir = -1
		os.Remove(q.path) // only when empty
	}
}
