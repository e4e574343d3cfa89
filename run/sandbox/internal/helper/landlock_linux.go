package helper

import (
	"cmp"
	"errors"
	"os"
	"slices"
	"strconv"
	"syscall"
	"unsafe"

	"github.com/capkit/capkit/limits"
)

// WantABI is the Landlock ABI whose rights the rules use; older kernels
// enforce what they know (best effort) and Run's result says so.
const WantABI = 10

// MinReducedABI is the oldest Landlock ABI reduced containment runs on:
// ABI 1 has no refer right, and a ruleset without it denies every rename
// and link across directories, so nothing is enforced there (as
// go-landlock's best effort does) and a command cannot be contained
// without namespaces.
const MinReducedABI = 2

// LandlockABI is the kernel's Landlock ABI version, 0 without Landlock.
func LandlockABI() int {
	v, _, e := syscall.Syscall(sysLandlockCreateRuleset, 0, 0, landlockVersionArg)
	if e != 0 {
		return 0
	}
	return int(v)
}

// Landlock filesystem rights (uapi/linux/landlock.h).
const (
	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13
	llTruncate   = 1 << 14

	llRead  = llExecute | llReadFile | llReadDir
	llWrite = llWriteFile | llRemoveDir | llRemoveFile | llMakeChar | llMakeDir | llMakeReg |
		llMakeSock | llMakeFifo | llMakeBlock | llMakeSym | llTruncate
	llFile = llExecute | llWriteFile | llTruncate | llReadFile
)

// handled is what a ruleset restricts on a kernel of Landlock ABI abi
// (capped at WantABI): every filesystem right it knows, TCP (ABI 4) and
// UDP (ABI 10) bind and connect with no rule granting any, and abstract
// sockets and signals scoped (ABI 6).
func handled(abi int) (fs, net, scoped uint64) {
	abi = min(abi, WantABI)
	fsBits := []int{0, 13, 14, 15, 15, 16, 16, 16, 16, 17, 17}[max(abi, 0)]
	fs = 1<<fsBits - 1
	switch {
	case abi >= 10:
		net = 1<<4 - 1
	case abi >= 4:
		net = 1<<2 - 1
	}
	if abi >= 6 {
		scoped = 1<<2 - 1
	}
	return fs, net, scoped
}

// rule grants access beneath each of paths: of the rights the ruleset
// handles, those of access (all of them when exact). The paths of a rule
// in a root are opened with no symbolic link in any element: one swapped
// in by a process writing the root would carry the grant elsewhere.
type rule struct {
	paths         []string
	access        uint64
	exact         bool
	ignoreMissing bool
	inRoot        bool
}

// rooted is r with its paths opened as paths in a root are.
func rooted(r rule) rule {
	r.inRoot = true
	return r
}

func roDirs(paths ...string) rule  { return rule{paths: paths, access: llRead} }
func rwDirs(paths ...string) rule  { return rule{paths: paths, access: llRead | llWrite | llRefer} }
func roFiles(paths ...string) rule { return rule{paths: paths, access: llRead & llFile} }
func rwFiles(paths ...string) rule { return rule{paths: paths, access: (llRead | llWrite) & llFile} }

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
// Run made). It returns the directories of the writable roots it closed.
func restrictLandlock(msg *Message, tmp string, mounted map[string]bool) (closed []string, err error) {
	v := msg.View
	budget := limits.RunMaxLandlockRules
	var rules []rule
	var over error // the first rule past the budget
	add := func(r rule) error {
		if budget--; budget < 0 && over == nil {
			over = errors.New("landlock: more than " + strconv.Itoa(limits.RunMaxLandlockRules) + " rules")
		}
		rules = append(rules, r)
		return over
	}
	for _, d := range systemDirs {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			add(roDirs(d))
		}
	}
	if msg.Full {
		// The view holds nothing else: listing directories reveals only it.
		add(roDirs("/etc"))
		add(rule{paths: []string{"/"}, access: llReadDir, exact: true})
	} else {
		for _, e := range etcEntries {
			p := "/etc/" + e
			if st, err := os.Stat(p); err == nil {
				if st.IsDir() {
					add(roDirs(p))
				} else {
					add(roFiles(p))
				}
			}
		}
		r := roFiles("/etc/passwd", "/etc/group", "/etc/hosts")
		r.ignoreMissing = true
		add(r)
	}
	add(roDirs("/proc"))
	for _, d := range devNodes {
		add(rwFiles("/dev/" + d))
	}
	if _, err := tmpRules(msg, tmp, add); err != nil {
		return nil, err
	}
	if len(v.ReadOnly) > 0 {
		add(rooted(roDirs(v.ReadOnly...)))
	}
	for _, root := range v.Writable {
		kept, shown := protectedIn(v, root, mounted)
		c, err := writableRules(root, kept, shown, add)
		if err != nil {
			return nil, err
		}
		closed = append(closed, c...)
	}
	if over != nil {
		return nil, over
	}
	var connect []uint16
	if msg.Network {
		connect = append(connect, ProxyPort)
	}
	return closed, restrictThread(rules, connect)
}

// restrictThread sets no_new_privs and enforces the rules on the calling
// thread only, which then execs the command: the command inherits its
// domain, and the helper's other threads end at the exec. TCP connect is
// allowed to the connect ports alone, bind to none (ABI 4 on). On a
// kernel without the refer right (ABI 1), whose rulesets deny every
// rename and link across directories, nothing is enforced, as
// go-landlock's best effort does.
func restrictThread(rules []rule, connect []uint16) error {
	if err := prctl(prSetNoNewPrivs, 1, 0); err != nil {
		return wrap("no_new_privs", err)
	}
	fs, net, scoped := handled(LandlockABI())
	if fs&llRefer == 0 {
		return nil // full containment's mounts stand alone; Run refuses reduced containment here (MinReducedABI)
	}
	attr := [3]uint64{fs, net, scoped}
	r, _, e := syscall.Syscall(sysLandlockCreateRuleset, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if e != 0 {
		return wrap("landlock_create_ruleset", e)
	}
	fd := int(r)
	defer syscall.Close(fd)
	for _, rl := range rules {
		if err := addRule(fd, rl, fs); err != nil {
			return err
		}
	}
	if net&llConnectTCP != 0 {
		for _, port := range connect {
			if err := addPortRule(fd, port, llConnectTCP); err != nil {
				return err
			}
		}
	}
	if _, _, e := syscall.Syscall(sysLandlockRestrictSelf, uintptr(fd), 0, 0); e != 0 {
		return wrap("landlock_restrict_self", e)
	}
	return nil
}

// Landlock network rights and the port rule's type.
const (
	llConnectTCP     = 1 << 1
	landlockPortRule = 2
)

// addPortRule allows access (network rights) on the TCP port.
func addPortRule(ruleset int, port uint16, access uint64) error {
	attr := struct{ access, port uint64 }{access, uint64(port)}
	_, _, e := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), landlockPortRule, uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return wrap("landlock_add_rule port "+strconv.Itoa(int(port)), e)
	}
	return nil
}

func addRule(ruleset int, r rule, fs uint64) error {
	access := r.access & fs
	if r.exact && access != r.access {
		return errors.New("landlock: rights " + hex(r.access) + " not handled (" + hex(fs) + ")")
	}
	if access == 0 {
		return nil
	}
	for _, p := range r.paths {
		fd, err := openRulePath(p, r.inRoot)
		if errors.Is(err, syscall.ENOENT) && r.ignoreMissing {
			continue
		}
		if err != nil {
			return wrap("landlock: "+p, err)
		}
		var attr [12]byte // packed: the access mask, then the descriptor
		*(*uint64)(unsafe.Pointer(&attr[0])) = access
		*(*int32)(unsafe.Pointer(&attr[8])) = int32(fd)
		_, _, e := syscall.Syscall6(sysLandlockAddRule, uintptr(ruleset), landlockPathRule, uintptr(unsafe.Pointer(&attr[0])), 0, 0, 0)
		syscall.Close(fd)
		if e != 0 {
			return wrap("landlock_add_rule "+p+" (rights "+hex(access)+")", e)
		}
	}
	return nil
}

// tmpRules grants the private tmp read-write. Roots shown under it (full
// containment, roots in the host's /tmp) would inherit that grant, so
// then the directories leading to them are closed to new entries, and
// the command's TMPDIR is a scratch directory beside them (ScratchDir).
func tmpRules(msg *Message, tmp string, add func(rule) error) ([]string, error) {
	under := rootsUnder(msg, tmp)
	if len(under) == 0 {
		return nil, add(rwDirs(tmp))
	}
	return writableRules(tmp, under, nil, add)
}

// rootsUnder lists the roots within dir.
func rootsUnder(msg *Message, dir string) []string {
	var out []string
	if !msg.Full {
		return nil
	}
	for _, r := range slices.Concat(msg.View.Writable, msg.View.ReadOnly) {
		if within(dir, r) {
			out = append(out, r)
		}
	}
	return out
}

// protectedIn splits the protected paths within root: those Landlock
// must keep read-only (all of them in reduced containment; in full
// containment those not mounted read-only: missing when the view was
// built, which may exist by now, or reached through a symbolic link),
// and those shown mounted. A mount point cannot be renamed or removed,
// but the directories above it can: Landlock closes them (ClosedDirs).
func protectedIn(v *View, root string, mounted map[string]bool) (kept, shown []string) {
	for _, p := range v.Protected {
		switch {
		case !within(root, p):
		case mounted[p]:
			shown = append(shown, p)
		default:
			kept = append(kept, p)
		}
	}
	return kept, shown
}

// writableRules grants root read-write except for the protected paths:
// the directory holding a protected path (the deepest one that exists),
// and every directory between it and root, get read rights only, and each
// of their other entries read-write, so the protected path can be neither
// written nor created, renamed or removed. Symbolic links and special
// files among those entries get nothing of their own.
func writableRules(root string, protected, shown []string, add func(rule) error) ([]string, error) {
	closedDirs := closedIn(root, protected, shown)
	closed := map[string]bool{}
	for _, d := range closedDirs {
		closed[d] = true
	}
	keep := map[string]bool{}
	for _, p := range protected {
		keep[p] = true
	}
	if !closed[root] {
		return nil, add(rooted(rwDirs(root)))
	}
	var open func(dir string) error
	open = func(dir string) error {
		if err := add(rooted(roDirs(dir))); err != nil {
			return err
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			return wrap("landlock: listing "+dir, err)
		}
		// A closed directory needs a rule for each entry; past the
		// budget (add's only failure), say which and how to open it.
		tooMany := func() error {
			return errors.New("landlock: " + dir + " is closed (it holds or leads to a protected path that must not be created, such as a missing capkit.toml or .git) and its " +
				strconv.Itoa(len(entries)) + " entries would each need a rule of their own, past the " + strconv.Itoa(limits.RunMaxLandlockRules) +
				" a run may have; the host opens it by creating the missing path (an empty capkit.toml, or git init)")
		}
		for _, e := range entries {
			p := join(dir, e.Name())
			switch {
			case keep[p]:
			case closed[p] && e.IsDir():
				if err := open(p); err != nil {
					return err
				}
			case e.IsDir():
				err = add(rooted(rwDirs(p)))
			case e.Type().IsRegular():
				err = add(rooted(rwFiles(p)))
			}
			if err != nil {
				return tooMany()
			}
		}
		return nil
	}
	return closedDirs, open(root)
}

// closedIn lists the directories of root that writableRules closes for
// protected, the paths within root Landlock keeps, and shown, those
// mounted read-only: the deepest existing directory holding each kept
// path, and for a shown one the directory above the one holding it (so
// the mount cannot be carried away by a rename and replaced), and every
// directory between those and root; root first.
func closedIn(root string, protected, shown []string) []string {
	var closed []string
	from := slices.Clone(protected)
	for _, p := range shown {
		if parent(p) != root {
			from = append(from, parent(p))
		}
	}
	for _, p := range from {
		d := parent(p)
		for {
			// A symbolic link on the way is not a directory to close.
			if st, err := os.Lstat(d); err == nil && st.IsDir() || d == root {
				break
			}
			d = parent(d)
		}
		for ; within(root, d); d = parent(d) {
			if !slices.Contains(closed, d) {
				closed = append(closed, d)
			}
			if d == root {
				break
			}
		}
	}
	slices.SortFunc(closed, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b)) })
	return closed
}

// openRulePath opens a rule's path as an O_PATH descriptor, with no
// symbolic link in any element when inRoot.
func openRulePath(p string, inRoot bool) (int, error) {
	if inRoot {
		return openNoSymlinks(p)
	}
	return syscall.Open(p, oPath|syscall.O_CLOEXEC, 0)
}

func hex(v uint64) string { return "0x" + strconv.FormatUint(v, 16) }
