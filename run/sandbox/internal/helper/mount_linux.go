package helper

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/capkit/capkit/limits"
)

// newRoot is where the container's root is assembled, in the helper's own
// mount namespace (the host's directory is only covered there).
const newRoot = "/tmp"

// mountPlan is one tree of the host shown in the container: a detached
// clone of it, made before anything is covered, and where it goes.
type mountPlan struct {
	fd     int
	target string
	dir    bool
	// pin is a directory on the way to a protected path, mounted on
	// itself read-write so that it cannot be renamed or removed (a mount
	// point cannot), and the protected path with it.
	pin bool
}

// buildRoot assembles the container's root and pivots into it. It runs in
// the new user and mount namespaces, with CAP_SYS_ADMIN there. It returns
// the protected paths it mounted read-only (Run checks that every one
// that exists is among them).
func buildRoot(s *View, note func(string)) (map[string]bool, error) {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return nil, wrap("sandbox helper: making mounts private", err)
	}
	plans, links, err := planMounts(s)
	defer func() {
		for _, p := range plans {
			syscall.Close(p.fd)
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := mountTmpfs(newRoot, limits.RunSkeletonBytes, 1024, "0755"); err != nil {
		return nil, err
	}
	if err := writeSkeleton(links); err != nil {
		return nil, err
	}
	if err := mountTmpfs(newRoot+"/tmp", s.Limits.TmpBytes, limits.RunTmpInodes, "1777"); err != nil {
		return nil, err
	}
	mounted, err := placeAll(plans, s.Protected)
	if err != nil {
		return nil, err
	}
	if err := mountProc(s.Limits.Processes, note); err != nil {
		return nil, err
	}
	return mounted, pivot()
}

// placeAll puts the cloned trees in the new root, parents first, and
// returns the protected paths it mounted. One that vanished since it was
// cloned (removed, or a directory on its way swapped for a link) is not
// mounted, and Run, finding it missing or not held, sees to it.
func placeAll(plans []mountPlan, protected []string) (map[string]bool, error) {
	top, err := syscall.Open(newRoot, oPath|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, wrap("sandbox helper: the new root", err)
	}
	defer syscall.Close(top)
	ours, err := skeletonDevices()
	if err != nil {
		return nil, err
	}
	mounted := map[string]bool{}
	for _, p := range plans {
		isProtected := slices.Contains(protected, p.target)
		err := place(top, ours, p)
		switch {
		case err == errVanished && (isProtected || p.pin):
		case err == errVanished:
			return nil, errors.New("sandbox helper: mount point " + p.target + " is gone or reached through a symbolic link")
		case err != nil:
			return nil, err
		case isProtected:
			mounted[p.target] = true
		}
	}
	return mounted, nil
}

// skeletonDevices are the devices of the helper's own tmpfs mounts (the
// new root and its /tmp): only there are missing mount points made.
func skeletonDevices() ([]uint64, error) {
	var devs []uint64
	for _, d := range []string{newRoot, newRoot + "/tmp"} {
		var st syscall.Stat_t
		if err := syscall.Lstat(d, &st); err != nil {
			return nil, wrap("sandbox helper: "+d, err)
		}
		devs = append(devs, uint64(st.Dev))
	}
	return devs, nil
}

// planMounts clones the trees the view shows: system directories and
// /etc entries read-only, device nodes, the roots, and read-only clones
// of the protected paths that exist beneath their root with no symbolic
// link on the way, with the directories between the root and each of
// them pinned (cloned onto themselves). Merged-/usr symbolic links (/bin
// -> usr/bin) are returned to be recreated.
func planMounts(s *View) (plans []mountPlan, links map[string]string, err error) {
	p := &planner{}
	links = map[string]string{}
	for _, d := range systemDirs {
		st, err := os.Lstat(d)
		switch {
		case err != nil:
		case st.Mode()&os.ModeSymlink != 0:
			if links[d], err = os.Readlink(d); err != nil {
				return p.plans, nil, wrap("sandbox helper: "+d, err)
			}
		case st.IsDir():
			if err := p.clone(d, true, false, false); err != nil {
				return p.plans, nil, err
			}
		}
	}
	for _, e := range etcEntries {
		if err := p.clone("/etc/"+e, true, false, true); err != nil {
			return p.plans, nil, err
		}
	}
	for _, d := range devNodes {
		if err := p.clone("/dev/"+d, false, true, false); err != nil {
			return p.plans, nil, err
		}
	}
	for _, r := range s.Writable {
		if err := p.cloneRoot(r, false); err != nil {
			return p.plans, nil, err
		}
	}
	for _, r := range s.ReadOnly {
		if err := p.cloneRoot(r, true); err != nil {
			return p.plans, nil, err
		}
	}
	for _, pp := range s.Protected {
		if err := p.cloneProtected(s.Writable, pp); err != nil {
			return p.plans, nil, err
		}
	}
	// Parents before children: a root's protected paths go on top of it.
	slices.SortStableFunc(p.plans, func(a, b mountPlan) int {
		return cmp.Compare(countSlashes(a.target), countSlashes(b.target))
	})
	return p.plans, links, nil
}

// planner collects the cloned trees; the caller closes their descriptors.
type planner struct{ plans []mountPlan }

const cloneFlags = openTreeClone | syscall.O_CLOEXEC | atRecursive

// clone clones the host's tree at src (a system path: symbolic links are
// followed); a missing src is skipped when optional.
func (p *planner) clone(src string, ro, dev, optional bool) error {
	fd, err := openTree(src, cloneFlags)
	if optional && err == syscall.ENOENT {
		return nil
	}
	if err != nil {
		return wrap("sandbox helper: cloning "+src, err)
	}
	_, err = p.add(src, fd, ro, dev)
	return err
}

// cloneRoot clones a root, which must still be the directory at its
// path, not a symbolic link swapped in since it was granted.
func (p *planner) cloneRoot(root string, ro bool) error {
	fd, err := openTree(root, cloneFlags|atSymlinkNofollow)
	if err != nil {
		return wrap("sandbox helper: cloning root "+root, err)
	}
	dir, err := p.add(root, fd, ro, false)
	if err == nil && !dir {
		err = errors.New("sandbox helper: root " + root + " is no longer a directory")
	}
	return err
}

// cloneProtected clones the protected path pp read-only when it exists
// inside its root with no symbolic link on the way (one planted in the
// root must not bring a tree from elsewhere into the view), and pins the
// directories between the root and it: a mount point cannot be renamed
// or removed, but a directory holding one could be, carrying it away, and
// a new pp made in its place. Otherwise nothing is mounted (Run moves
// what the command makes there out of the root).
func (p *planner) cloneProtected(roots []string, pp string) error {
	root, err := rootOf(roots, pp)
	if err != nil {
		return err
	}
	rootFD, err := syscall.Open(root, oPath|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return wrap("sandbox helper: root "+root, err)
	}
	defer syscall.Close(rootFD)
	at, shown, err := openProtected(rootFD, pp, len(root))
	if err != nil || !shown {
		return err
	}
	err = p.cloneAt(at, pp, true)
	for d := parent(pp); err == nil && d != root; d = parent(d) {
		at, shown, err = openProtected(rootFD, d, len(root))
		if err == nil && shown {
			err = p.cloneAt(at, d, false)
		}
	}
	return err
}

// cloneAt clones the tree at the O_PATH descriptor at (which it closes)
// for target: read-only for a protected path, read-write as a pin. A
// target already planned is cloned once; a protected path is read-only
// even where it also lies on the way to another.
func (p *planner) cloneAt(at int, target string, protected bool) error {
	defer syscall.Close(at)
	if i := slices.IndexFunc(p.plans, func(m mountPlan) bool { return m.target == target }); i >= 0 {
		if protected && p.plans[i].pin {
			p.plans[i].pin = false
			if err := mountSetattr(p.plans[i].fd, "", atEmptyPath|atRecursive, mountAttrRdonly); err != nil {
				return wrap("sandbox helper: mount attributes of "+target, err)
			}
		}
		return nil
	}
	fd, err := openTreeAt(at, "", cloneFlags|atEmptyPath)
	if err != nil {
		return wrap("sandbox helper: cloning "+target, err)
	}
	if _, err = p.add(target, fd, protected, false); err == nil && !protected {
		p.plans[len(p.plans)-1].pin = true
	}
	return err
}

// rootOf is the writable root holding the protected path pp (the
// innermost one).
func rootOf(roots []string, pp string) (string, error) {
	root := ""
	for _, r := range roots {
		if within(r, pp) && len(r) > len(root) {
			root = r
		}
	}
	if root == "" || root == pp {
		return "", errors.New("sandbox helper: protected path " + pp + " is not inside a writable root")
	}
	return root, nil
}

// openProtected opens p (a path in the root of rootFD, whose path is
// rootLen bytes long) beneath it as an O_PATH descriptor; shown is false
// when p is missing or reached through a symbolic link.
func openProtected(rootFD int, p string, rootLen int) (fd int, shown bool, err error) {
	fd, err = openBeneath(rootFD, p[rootLen+1:])
	switch err {
	case nil:
		return fd, true, nil
	case syscall.ENOENT, syscall.ELOOP, syscall.ENOTDIR, syscall.EXDEV:
		return -1, false, nil
	}
	return -1, false, wrap("sandbox helper: protected path "+p, err)
}

// add records the tree cloned from src (descriptor fd, which p then
// owns), sets its mount attributes, and says whether it is a directory.
func (p *planner) add(src string, fd int, ro, dev bool) (dir bool, err error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		syscall.Close(fd)
		return false, wrap("sandbox helper: "+src, err)
	}
	dir = st.Mode&syscall.S_IFMT == syscall.S_IFDIR
	p.plans = append(p.plans, mountPlan{fd: fd, target: src, dir: dir})
	attr := uint64(mountAttrNosuid)
	if !dev {
		attr |= mountAttrNodev
	}
	if ro {
		attr |= mountAttrRdonly
	}
	if err := mountSetattr(fd, "", atEmptyPath|atRecursive, attr); err != nil {
		return dir, wrap("sandbox helper: mount attributes of "+src, err)
	}
	return dir, nil
}

func mountTmpfs(target string, size int64, inodes int, mode string) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return wrap("sandbox helper: "+target, err)
	}
	opts := "size=" + strconv.FormatInt(size, 10) + ",nr_inodes=" + strconv.Itoa(inodes) + ",mode=" + mode
	if err := syscall.Mount("capkit", target, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return wrap("sandbox helper: tmpfs on "+target, err)
	}
	return nil
}

// writeSkeleton writes the container's own /etc files, /dev links and the
// merged-/usr links.
func writeSkeleton(links map[string]string) error {
	for _, d := range []string{"/etc", "/dev", "/proc"} {
		if err := os.Mkdir(newRoot+d, 0o755); err != nil {
			return wrap("sandbox helper: skeleton "+d, err)
		}
	}
	id := strconv.Itoa(ID)
	files := map[string]string{
		"/etc/passwd":   "root:x:0:0:root:/nonexistent:/usr/sbin/nologin\nsandbox:x:" + id + ":" + id + ":sandbox:/tmp/home:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
		"/etc/group":    "root:x:0:\nsandbox:x:" + id + ":\nnogroup:x:65534:\n",
		"/etc/hostname": "capkit-sandbox\n",
		"/etc/hosts":    "127.0.0.1 localhost capkit-sandbox\n::1 localhost\n",
	}
	for name, text := range files {
		if err := writeNew(newRoot+name, text); err != nil {
			return wrap("sandbox helper: skeleton "+name, err)
		}
	}
	symlinks := map[string]string{"/dev/fd": "/proc/self/fd", "/dev/stdin": "/proc/self/fd/0",
		"/dev/stdout": "/proc/self/fd/1", "/dev/stderr": "/proc/self/fd/2"}
	for l, t := range links {
		symlinks[l] = t
	}
	for l, t := range symlinks {
		if err := os.Symlink(t, newRoot+l); err != nil {
			return wrap("sandbox helper: skeleton "+l, err)
		}
	}
	return nil
}

// errVanished is a mount point inside a host tree that is no longer
// there: the helper makes mount points only in its own tmpfs.
var errVanished = errors.New("sandbox helper: the mount point is gone")

// place puts a cloned tree at its path in the new root top. The path is
// walked one element at a time beneath top, refusing a symbolic link in
// any element, so a tree of the host (a root, where another process may
// swap a directory for a link meanwhile) can neither lead the mount
// elsewhere nor have the helper make anything in it: missing elements
// are made only on the devices in ours (the helper's own tmpfs mounts).
func place(top int, ours []uint64, p mountPlan) error {
	dir, err := syscall.Dup(top)
	if err != nil {
		return wrap("sandbox helper: mounting "+p.target, err)
	}
	elems := splitPath(p.target)
	for i, e := range elems {
		last := i == len(elems)-1
		next, err := openOrMake(dir, e, ours, !last || p.dir)
		syscall.Close(dir)
		switch err {
		case errVanished, syscall.ELOOP, syscall.ENOTDIR, syscall.EXDEV:
			return errVanished
		}
		if err != nil {
			return wrap("sandbox helper: mount point "+p.target, err)
		}
		dir = next
	}
	defer syscall.Close(dir)
	if err := moveMountTo(p.fd, dir); err != nil {
		return wrap("sandbox helper: mounting "+p.target, err)
	}
	return nil
}

// openOrMake opens the entry name of dir (no symbolic link), making it
// first (a directory, or an empty file) when it is missing and dir is on
// one of ours.
func openOrMake(dir int, name string, ours []uint64, isDir bool) (int, error) {
	fd, err := openBeneath(dir, name)
	if err != syscall.ENOENT {
		return fd, err
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(dir, &st); err != nil {
		return -1, err
	}
	if !slices.Contains(ours, uint64(st.Dev)) {
		return -1, errVanished
	}
	if isDir {
		err = syscall.Mkdirat(dir, name, 0o755)
	} else {
		var f int
		if f, err = syscall.Openat(dir, name, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o644); err == nil {
			syscall.Close(f)
		}
	}
	if err != nil {
		return -1, err
	}
	return openBeneath(dir, name)
}

// splitPath lists the elements of the clean absolute path p.
func splitPath(p string) []string {
	var out []string
	for start, i := 1, 1; i <= len(p); i++ {
		if i == len(p) || p[i] == '/' {
			if i > start {
				out = append(out, p[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// mountProc mounts the new PID namespace's /proc, after setting the
// namespace's pid_max (the bound on its processes and threads) through a
// complete /proc; the one left shows only processes (subset=pid), so
// neither /proc/sys nor /proc/sysrq-trigger is there. Kernels before 6.14
// have no pid_max per namespace: that is noted, and RLIMIT_NPROC is the
// only bound left.
func mountProc(processes int64, note func(string)) error {
	target := newRoot + "/proc"
	flags := uintptr(syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC)
	if err := syscall.Mount("proc", target, "proc", flags, ""); err != nil {
		return wrap("sandbox helper: mounting /proc", err)
	}
	pidMax := strconv.FormatInt(max(processes, limits.RunMinProcesses), 10)
	werr := writeExisting(target+"/sys/kernel/pid_max", pidMax)
	if err := syscall.Unmount(target, syscall.MNT_DETACH); err != nil {
		return wrap("sandbox helper: unmounting /proc", err)
	}
	if werr != nil {
		note("the PID namespace's process limit could not be set (" + werr.Error() + "): processes are bounded by RLIMIT_NPROC alone, which does not bind the host's root")
	}
	if err := syscall.Mount("proc", target, "proc", flags, "subset=pid"); err != nil {
		return wrap("sandbox helper: mounting /proc", err)
	}
	return nil
}

// pivot makes the new root the process's root, detaches the old one, and
// makes the skeleton read-only.
func pivot() error {
	if err := syscall.Chdir(newRoot); err != nil {
		return wrap("sandbox helper", err)
	}
	if err := syscall.PivotRoot(".", "."); err != nil {
		return wrap("sandbox helper: pivot_root", err)
	}
	if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
		return wrap("sandbox helper: detaching the host's root", err)
	}
	if err := syscall.Chdir("/"); err != nil {
		return wrap("sandbox helper", err)
	}
	if err := mountSetattr(atFDCWD, "/", 0, mountAttrRdonly); err != nil {
		return wrap("sandbox helper: making the root read-only", err)
	}
	return nil
}

// writeNew creates the file name holding text. The helper writes its
// files with bare system calls: an os.File costs three times the calls
// (and the first one starts the runtime's poller), for a write or none.
func writeNew(name, text string) error {
	return writeFile(name, syscall.O_CREAT|syscall.O_EXCL, text)
}

// writeExisting writes text to the existing file name.
func writeExisting(name, text string) error {
	return writeFile(name, 0, text)
}

func writeFile(name string, flags int, text string) error {
	fd, err := syscall.Open(name, syscall.O_WRONLY|syscall.O_CLOEXEC|syscall.O_NOFOLLOW|flags, 0o644)
	if err != nil {
		return &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer syscall.Close(fd)
	for b := []byte(text); len(b) > 0; {
		n, err := syscall.Write(fd, b)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "write", Path: name, Err: err}
		}
		b = b[n:]
	}
	return nil
}
