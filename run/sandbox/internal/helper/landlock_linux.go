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
// full containment the paths are those of the new root, whose mounts keep
// the protected paths read-only; in reduced containment, the host's,
// listed one by one (only the /etc entries above, the private tmp Run
// made), and the protected paths that exist are kept read-only here. It
// returns the directories of the writable roots it closed to do so.
func restrictLandlock(msg *Message, tmp string) (closed []string, err error) {
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
	// Roots shown on the private tmp (full containment, roots in the
	// host's /tmp) inherit its grant: their own mounts keep the read-only
	// ones and the protected paths read-only.
	add(rwDirs(tmp))
	if len(v.ReadOnly) > 0 {
		add(rooted(roDirs(v.ReadOnly...)))
	}
	for _, root := range v.Writable {
		c, err := writableRules(root, keptIn(msg, root), add)
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

// keptIn lists the protected paths within root that Landlock keeps
// read-only: in reduced containment those that exist now (through a
// symbolic link too); none in full containment, whose mounts do. A
// missing one is not kept: Landlock could only keep it from being made
// by closing its directory, so Run moves what the command makes there
// out of the root instead.
func keptIn(msg *Message, root string) []string {
	if msg.Full {
		return nil
	}
	var kept []string
	for _, p := range msg.View.Protected {
		var st syscall.Stat_t
		if within(root, p) && syscall.Lstat(p, &st) == nil {
			kept = append(kept, p)
		}
	}
	return kept
}

// writableRules grants root read-write except for the paths kept: the
// directory holding a kept path (the deepest one that exists), and every
// directory between it and root, get read rights only, and each of their
// other entries read-write, so the kept path can be neither written nor
// replaced, renamed or removed. Symbolic links and special files among
// those entries get nothing of their own.
func writableRules(root string, protected []string, add func(rule) error) ([]string, error) {
	closedDirs := closedIn(root, protected)
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
			return errors.New("landlock: " + dir + " is closed (it holds or leads to a path kept read-only, such as .git) and its " +
				strconv.Itoa(len(entries)) + " entries would each need a rule of their own, past the " + strconv.Itoa(limits.RunMaxLandlockRules) +
				" a run may have; full containment (user namespaces) keeps it open")
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
// kept, the paths within root Landlock keeps: the deepest existing
// directory holding each, and every directory between it and root; root
// first.
func closedIn(root string, kept []string) []string {
	var closed []string
	for _, p := range kept {
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
