package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	llsyscall "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/limits"
)

// landlockWantABI is the Landlock ABI whose rights the rules use; older
// kernels enforce what they know (best effort) and the result says so.
const landlockWantABI = 10

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func landlockABI() int {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		return 0
	}
	return int(v)
}

// The system directories shown read-only, and the entries of /etc: what
// programs read (the loader's cache, time zone, certificates), never
// secrets (/etc/shadow, /etc/ssl/private: the host's user owns them, and
// the container runs as that user).
var (
	systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32"}
	etcEntries = []string{"ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime",
		"nsswitch.conf", "protocols", "services", "mime.types", "ssl/certs", "ca-certificates", "os-release",
		"debian_version", "inputrc", "bash.bashrc", "profile", "gitconfig", "magic"}
	devNodes = []string{"null", "zero", "full", "random", "urandom"}
)

// restrictLandlock applies the rules matching the container's view: in
// full containment the paths are those of the new root (mounted lists the
// protected paths it shows read-only); in reduced containment, the
// host's, listed one by one (only the /etc entries above, the private tmp
// Run made).
func restrictLandlock(msg *message, tmp string, mounted map[string]bool) error {
	s := msg.Spec
	budget := limits.RunMaxLandlockRules
	var rules []landlock.Rule
	add := func(r landlock.Rule) error {
		if budget--; budget < 0 {
			return fmt.Errorf("landlock: more than %d rules", limits.RunMaxLandlockRules)
		}
		rules = append(rules, r)
		return nil
	}
	for _, d := range systemDirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			add(landlock.RODirs(d))
		}
	}
	if msg.Full {
		// The view holds nothing else: listing directories reveals only it.
		add(landlock.RODirs("/etc"))
		add(landlock.PathAccess(landlock.AccessFSSet(unix.LANDLOCK_ACCESS_FS_READ_DIR), "/"))
	} else {
		for _, e := range etcEntries {
			p := filepath.Join("/etc", e)
			if st, err := os.Stat(p); err == nil {
				if st.IsDir() {
					add(landlock.RODirs(p))
				} else {
					add(landlock.ROFiles(p))
				}
			}
		}
		add(landlock.ROFiles("/etc/passwd", "/etc/group", "/etc/hosts").IgnoreIfMissing())
	}
	add(landlock.RODirs("/proc"))
	for _, d := range devNodes {
		add(landlock.RWFiles("/dev/" + d))
	}
	if err := tmpRules(msg, tmp, add); err != nil {
		return err
	}
	if len(s.ReadOnly) > 0 {
		add(landlock.RODirs(s.ReadOnly...))
	}
	for _, root := range s.Writable {
		if err := writableRules(root, protectedIn(s, root, mounted), add); err != nil {
			return err
		}
	}
	return restrictThread(rules)
}

// restrictThread enforces the rules on the calling thread only, which then
// execs the command: the command inherits its domain, and the helper's
// other threads end at the exec. (Restricting every thread of a Go process
// takes a signal round per thread on kernels before ABI 8.)
func restrictThread(rules []landlock.Rule) error {
	fd, flags, err := landlock.V10.BestEffort().NewRulesetFD(rules...)
	if err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if fd < 0 {
		return nil // no Landlock: Run has refused reduced containment then
	}
	defer unix.Close(fd)
	if err := llsyscall.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}

// tmpRules grants the private tmp read-write. Roots shown under it (full
// containment, roots in the host's /tmp) would inherit that grant, so
// then the directories leading to them are closed to new entries, and
// the command's TMPDIR is a scratch directory beside them (scratchDir).
func tmpRules(msg *message, tmp string, add func(landlock.Rule) error) error {
	under := rootsUnder(msg, tmp)
	if len(under) == 0 {
		return add(landlock.RWDirs(tmp).WithRefer())
	}
	return writableRules(tmp, under, add)
}

// rootsUnder lists the roots within dir.
func rootsUnder(msg *message, dir string) []string {
	var out []string
	if !msg.Full {
		return nil
	}
	for _, r := range append(slices.Clone(msg.Spec.Writable), msg.Spec.ReadOnly...) {
		if within(dir, r) {
			out = append(out, r)
		}
	}
	return out
}

// protectedIn lists the protected paths within root that Landlock must
// keep read-only: those not mounted read-only (all of them in reduced
// containment; in full containment those missing when the view was built,
// which may exist by now). A read-only mount cannot be renamed or removed
// either.
func protectedIn(s *Spec, root string, mounted map[string]bool) []string {
	var out []string
	for _, p := range s.Protected {
		if within(root, p) && !mounted[p] {
			out = append(out, p)
		}
	}
	return out
}

// writableRules grants root read-write except for the protected paths:
// the directory holding a protected path (the deepest one that exists),
// and every directory between it and root, get read rights only, and each
// of their other entries read-write, so the protected path can be neither
// written nor created, renamed or removed. Symbolic links and special
// files among those entries get nothing of their own.
func writableRules(root string, protected []string, add func(landlock.Rule) error) error {
	closed := map[string]bool{}
	keep := map[string]bool{}
	for _, p := range protected {
		keep[p] = true
		d := filepath.Dir(p)
		for {
			if _, err := os.Lstat(d); err == nil || d == root {
				break
			}
			d = filepath.Dir(d)
		}
		for ; within(root, d); d = filepath.Dir(d) {
			closed[d] = true
			if d == root {
				break
			}
		}
	}
	if !closed[root] {
		return add(landlock.RWDirs(root).WithRefer())
	}
	var open func(dir string) error
	open = func(dir string) error {
		if err := add(landlock.RODirs(dir)); err != nil {
			return err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("landlock: listing %s: %w", dir, err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			switch {
			case keep[p]:
			case closed[p] && e.IsDir():
				if err := open(p); err != nil {
					return err
				}
			case e.IsDir():
				err = add(landlock.RWDirs(p).WithRefer())
			case e.Type().IsRegular():
				err = add(landlock.RWFiles(p))
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return open(root)
}

// within reports whether p is root or lies under it.
func within(root, p string) bool {
	return p == root || strings.HasPrefix(p, strings.TrimSuffix(root, "/")+"/")
}
