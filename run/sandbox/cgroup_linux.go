package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/limits"
)

// A run's cgroup: a child of the host process's own cgroup v2 group,
// named for the process that made it (runGroupPrefix, its PID and start
// time, a sequence number), so that one left behind by a process that
// died is recognised and removed by the next process to make one.
const runGroupPrefix = "capkit-run."

// hostLeaf is the group the host process moves into, beside its run
// groups, when its own group is delegated to it but holds it: cgroup v2
// enables controllers for a group's children only while no process sits
// in the group itself.
const hostLeaf = "capkit-host"

// runControllers are the controllers a run's limits need.
var runControllers = []string{"memory", "pids", "cpu"}

// delegateHow is how a host gives capkit a cgroup it can enable
// controllers in; delegateAdvice says so in a note.
const (
	delegateHow    = "starting it as the only process of a cgroup delegated to it (systemd: a service or scope with Delegate=yes)"
	delegateAdvice = "a host gives capkit one by " + delegateHow
)

// cgroupPeriod is cpu.max's period in microseconds (the kernel's default).
const cgroupPeriod = 100_000

// cgroup is one run's group: the helper starts inside it (CLONE_INTO_CGROUP
// through fd), its limits are written before, and it is killed whole and
// removed when the run ends.
type cgroup struct {
	dir string
	fd  int
}

// cgroupHome is where run groups are made, or why none can be.
type cgroupHome struct {
	dir string
	why string // why there is no dir
	// unenabled says why controllers dir offers are not enabled for the
	// groups made in it, "" when they are.
	unenabled string
	v1        []string // controllers bound to cgroup v1 hierarchies
}

// cgroupBase is the host process's cgroup home, found once: its
// controllers enabled for run groups (moving the host process into a
// leaf when that is what it takes) and the groups of dead processes
// removed.
var cgroupBase = sync.OnceValue(func() cgroupHome {
	h := findCgroup()
	if h.why == "" {
		h.unenabled = delegate(h.dir, os.Getpid(), runControllers)
		sweepLeftovers(h.dir)
	}
	return h
})

// cgroupWrite writes a cgroup interface file (tests put a fake kernel in
// its place).
var cgroupWrite = func(file, value string) error {
	return os.WriteFile(file, []byte(value), 0)
}

// cgroupDelegated reports whether dir was handed to this process to
// manage: systemd marks a group it delegates (Delegate=yes) with the
// extended attribute trusted.delegate, or user.delegate for a user
// manager, set to "1"; a container's own group is the root of the cgroup
// mount it sees. A group that is merely writable may be one its manager
// rewrites, so capkit does not move itself out of it (tests replace this).
var cgroupDelegated = func(dir string) bool {
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		v := make([]byte, 8)
		if n, err := unix.Getxattr(dir, attr, v); err == nil && string(v[:n]) == "1" {
			return true
		}
	}
	var st, parent unix.Stat_t
	return unix.Stat(dir, &st) == nil && unix.Stat(filepath.Join(dir, ".."), &parent) == nil && st.Dev != parent.Dev
}

// findCgroup finds the cgroup v2 mount (the unified hierarchy, alone or
// beside v1 ones) and this process's group in it, and checks that new
// groups can be made and joined there.
func findCgroup() cgroupHome {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupHome{why: fmt.Sprintf("/proc/self/cgroup cannot be read (%v)", err)}
	}
	group, found, v1 := parseSelfCgroup(string(self))
	h := cgroupHome{v1: v1}
	if !found {
		h.why = "this process is in no cgroup v2 group (only cgroup v1 hierarchies)"
		return h
	}
	mount, root, err := cgroup2Mount()
	if err != nil {
		h.why = err.Error()
		return h
	}
	rel, err := filepath.Rel(root, group)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		h.why = fmt.Sprintf("this process's cgroup %s is outside the mounted cgroup v2 tree (%s)", group, root)
		return h
	}
	dir := filepath.Join(mount, rel)
	if filepath.Base(dir) == hostLeaf {
		// A capkit process moved itself there (delegate) and started
		// this one: its run groups are made beside the leaf too.
		dir = filepath.Dir(dir)
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		h.why = fmt.Sprintf("no delegated cgroup: %s is not writable by this user (%v); %s", dir, err, delegateAdvice)
		return h
	}
	if err := unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK); err != nil {
		h.why = fmt.Sprintf("no delegated cgroup: %s/cgroup.procs is not writable by this user (%v), so a process cannot be moved below it; %s", dir, err, delegateAdvice)
		return h
	}
	h.dir = dir
	return h
}

// parseSelfCgroup reads /proc/self/cgroup: the process's cgroup v2
// group, whether it has one, and the controllers bound to cgroup v1
// hierarchies ("ID:CONTROLLERS:PATH" lines; named ones like name=systemd
// are kept as they are).
func parseSelfCgroup(self string) (group string, found bool, v1 []string) {
	for _, line := range strings.Split(self, "\n") {
		if g, ok := strings.CutPrefix(line, "0::"); ok {
			group, found = g, true
		} else if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[1] != "" {
			v1 = append(v1, strings.Split(f[1], ",")...)
		}
	}
	return group, found, v1
}

// delegate enables, for the groups made in dir, the controllers of want
// that dir offers. When processes in dir keep them from being enabled
// (cgroup v2's no-internal-process rule, EBUSY) and the process pid is
// the only one there, it moves pid into the leaf hostLeaf first, as the
// kernel's cgroup v2 and systemd's delegation documents describe; when
// that is not possible, or dir is the hierarchy's root, it leaves
// everything as it was. It returns why controllers dir offers stay off
// for its children, "" when none does.
func delegate(dir string, pid int, want []string) string {
	offered, err := fields(dir, "cgroup.controllers")
	if err != nil {
		return err.Error()
	}
	enabled, err := fields(dir, "cgroup.subtree_control")
	if err != nil {
		return err.Error()
	}
	var pending []string
	for _, c := range want {
		if slices.Contains(offered, c) && !slices.Contains(enabled, c) {
			pending = append(pending, c)
		}
	}
	if len(pending) == 0 {
		return ""
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.type")); errors.Is(err, os.ErrNotExist) {
		// Only the hierarchy's root has no cgroup.type: its controllers
		// are the system's, not delegated to this process.
		return fmt.Sprintf("%s is the cgroup hierarchy's root group, whose controllers capkit leaves to the system; a host enables %s there (+%s in its cgroup.subtree_control), or gives capkit a cgroup of its own by %s",
			dir, strings.Join(pending, ", "), strings.Join(pending, " +"), delegateHow)
	}
	_, failed := enable(dir, pending)
	if len(failed) == 0 || !errors.Is(failed[0].err, unix.EBUSY) {
		return refusal(dir, failed)
	}
	held := fmt.Sprintf("%s holds processes, and cgroup v2 enables controllers for a group's children only while none sits in the group itself", dir)
	self, others, err := scanProcs(dir, pid)
	switch {
	case err != nil:
		return fmt.Sprintf("%s; they cannot be listed (%v); %s", held, err, delegateAdvice)
	case others != "":
		return fmt.Sprintf("%s; besides this process it holds %s, which capkit does not move (it moves only itself, into a leaf group); %s", held, others, delegateAdvice)
	case !self:
		return refusal(dir, failed)
	case !cgroupDelegated(dir):
		return fmt.Sprintf("%s; it is writable but not marked delegated (systemd sets the extended attribute trusted.delegate or user.delegate on a group it delegates, and a container's own group is the root of its cgroup mount), so capkit does not move itself out of it; %s", held, delegateAdvice)
	}
	leaf := filepath.Join(dir, hostLeaf)
	made := true
	if err := os.Mkdir(leaf, 0o755); errors.Is(err, os.ErrExist) {
		made = false
	} else if err != nil {
		return fmt.Sprintf("%s; the leaf group %s for this process cannot be made (%v); %s", held, leaf, err, delegateAdvice)
	}
	if err := cgroupWrite(filepath.Join(leaf, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		if made {
			unix.Rmdir(leaf)
		}
		return fmt.Sprintf("%s; this process cannot be moved into the leaf group %s (%v); %s", held, leaf, err, delegateAdvice)
	}
	on, failed := enable(dir, pending)
	if on > 0 {
		return refusal(dir, failed)
	}
	// Nothing was enabled: this process goes back where it was.
	why := fmt.Sprintf("this process moved into the leaf group %s, yet %s", leaf, refusal(dir, failed))
	if err := cgroupWrite(filepath.Join(dir, "cgroup.procs"), strconv.Itoa(pid)); err != nil {
		return fmt.Sprintf("%s; moving it back failed (%v), so it stays there", why, err)
	}
	if made {
		unix.Rmdir(leaf)
	}
	return why
}

// controllerError is a controller cgroup.subtree_control refused.
type controllerError struct {
	controller string
	err        error
}

// enable enables each controller in dir's cgroup.subtree_control: how
// many it enabled, and those refused; the first refusal with EBUSY stops
// it (every other would be refused alike: processes sit in dir).
func enable(dir string, cs []string) (on int, failed []controllerError) {
	for _, c := range cs {
		err := cgroupWrite(filepath.Join(dir, "cgroup.subtree_control"), "+"+c)
		if err == nil {
			on++
			continue
		}
		failed = append(failed, controllerError{c, err})
		if errors.Is(err, unix.EBUSY) {
			break
		}
	}
	return on, failed
}

// refusal says which controllers dir's cgroup.subtree_control refused,
// "" when none.
func refusal(dir string, failed []controllerError) string {
	if len(failed) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s/cgroup.subtree_control refused", dir)
	for i, f := range failed {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " +%s (%v)", f.controller, f.err)
	}
	b.WriteString("; ")
	b.WriteString(delegateAdvice)
	return b.String()
}

// maxListedProcs is how many other processes a report names.
const maxListedProcs = 3

// scanProcs reads dir's cgroup.procs: whether pid is in it, and the
// other processes, "" when there are none.
func scanProcs(dir string, pid int) (self bool, others string, err error) {
	f, err := os.Open(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return false, "", err
	}
	defer f.Close()
	var listed []string
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		switch p := sc.Text(); {
		case p == strconv.Itoa(pid):
			self = true
		case p == "0":
			// A process outside this PID namespace.
			n++
		default:
			if n++; len(listed) < maxListedProcs {
				listed = append(listed, p)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, "", err
	}
	if n == 0 {
		return self, "", nil
	}
	others = fmt.Sprintf("%d other process", n)
	if n > 1 {
		others += "es"
	}
	if len(listed) == 0 {
		return self, others + " outside this PID namespace", nil
	}
	if n > len(listed) {
		listed = append(listed, "...")
	}
	return self, others + " (PID " + strings.Join(listed, ", ") + ")", nil
}

// cgroup2Mount is where the cgroup v2 hierarchy is mounted and which of
// its groups the mount shows at its top.
func cgroup2Mount() (mount, root string, err error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", "", fmt.Errorf("/proc/self/mountinfo cannot be read (%v)", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, fs := strings.Fields(pre), strings.Fields(post)
		if ok && len(fields) >= 5 && len(fs) > 0 && fs[0] == "cgroup2" {
			return unescapeMount(fields[4]), unescapeMount(fields[3]), nil
		}
	}
	return "", "", errors.New("no cgroup v2 hierarchy is mounted")
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var runGroupSeq atomic.Uint64

// selfStart is this process's start time (field 22 of /proc/PID/stat),
// which with its PID names a process for good.
var selfStart = sync.OnceValue(func() string { return startTime(os.Getpid()) })

// startTime is a process's start time in clock ticks since boot, "" when
// the process is gone.
func startTime(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) is in parentheses and may hold anything.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// newCgroup makes a run's group below the host process's and writes the
// limits its enabled controllers can enforce. With no usable cgroup it
// returns nil and a report saying why.
func newCgroup(l Limits) (*cgroup, CgroupReport) {
	home := cgroupBase()
	if home.why != "" {
		return nil, noCgroup(home.why)
	}
	name := fmt.Sprintf("%s%d.%s.%d", runGroupPrefix, os.Getpid(), selfStart(), runGroupSeq.Add(1))
	dir := filepath.Join(home.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, noCgroup(fmt.Sprintf("%s cannot be made (%v)", dir, err))
	}
	c := &cgroup{dir: dir, fd: -1}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		c.remove()
		return nil, noCgroup("the kernel has no cgroup.kill (before 5.14), so a group cannot be ended whole")
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		c.remove()
		return nil, noCgroup(fmt.Sprintf("%s cannot be opened (%v)", dir, err))
	}
	c.fd = fd
	rep := applyLimits(dir, l, home)
	rep.Path = dir
	return c, rep
}

// noCgroup is the report of a run without a cgroup.
func noCgroup(why string) CgroupReport {
	return CgroupReport{Missing: []string{"memory, pids, cpu: no cgroup to run in: " + why +
		"; memory and CPU are bounded per process (rlimits), processes by the PID namespace's limit and RLIMIT_NPROC"}}
}

// cgroupLimit is one limit a controller enforces.
type cgroupLimit struct {
	controller, file, value, what string
}

// applyLimits writes into the group at dir, made in home, the limits of
// l its controllers offer (its cgroup.controllers lists those its parent
// enabled for its children) and reports the others with the reason.
func applyLimits(dir string, l Limits, home cgroupHome) CgroupReport {
	var rep CgroupReport
	parent := filepath.Dir(dir)
	enabled, err := fields(dir, "cgroup.controllers")
	if err != nil {
		rep.Missing = append(rep.Missing, fmt.Sprintf("memory, pids, cpu: %v", err))
		return rep
	}
	available, _ := fields(parent, "cgroup.controllers")
	for _, c := range wantedLimits(l) {
		if !slices.Contains(enabled, c.controller) {
			rep.Missing = append(rep.Missing, c.controller+": "+unavailable(c.controller, parent, available, home)+"; "+c.what)
			continue
		}
		if err := cgroupWrite(filepath.Join(dir, c.file), c.value); err != nil {
			rep.Missing = append(rep.Missing, fmt.Sprintf("%s: %s cannot be written (%v); %s", c.controller, c.file, err, c.what))
			continue
		}
		rep.Applied = append(rep.Applied, c.file+"="+c.value)
	}
	return rep
}

// unavailable says why a controller is not enabled for the groups made
// in parent, and what a host can do about it.
func unavailable(controller, parent string, available []string, home cgroupHome) string {
	switch {
	case slices.Contains(available, controller) && home.unenabled != "":
		return fmt.Sprintf("the controller is available to %s but not enabled in its cgroup.subtree_control: %s", parent, home.unenabled)
	case slices.Contains(available, controller):
		return fmt.Sprintf("the controller is available to %s but not enabled in its cgroup.subtree_control", parent)
	case slices.Contains(home.v1, controller):
		return "the controller is bound to a cgroup v1 hierarchy here (a hybrid layout), where cgroup v2 cannot use it; a host gets it by booting with the unified hierarchy alone (systemd.unified_cgroup_hierarchy=1)"
	}
	return fmt.Sprintf("the controller is not delegated to %s (its cgroup.controllers does not list it); %s", parent, delegateAdvice)
}

// fields lists the words of a group's interface file.
func fields(dir, file string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return nil, fmt.Errorf("%s/%s cannot be read (%v)", dir, file, err)
	}
	return strings.Fields(string(b)), nil
}

// wantedLimits are the cgroup limits of a run: its memory and processes
// as a whole (the rlimits bound each process), and its CPU bandwidth.
func wantedLimits(l Limits) []cgroupLimit {
	want := []cgroupLimit{
		{"memory", "memory.max", strconv.FormatInt(l.MemoryBytes, 10), "memory is bounded per process (address space) only"},
		{"pids", "pids.max", strconv.FormatInt(l.Processes, 10), "processes are bounded by the PID namespace's limit and RLIMIT_NPROC"},
	}
	if l.MilliCPUs != 0 {
		want = append(want, cgroupLimit{"cpu", "cpu.max", fmt.Sprintf("%d %d", l.MilliCPUs*cgroupPeriod/1000, cgroupPeriod), "CPU use is bounded per process (RLIMIT_CPU) only"})
	}
	return want
}

// kill ends every process in the group, wherever it moved in the
// process tree (setsid, double forks).
func (c *cgroup) kill() {
	if c != nil {
		os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
	}
}

// remove kills what is left in the group and removes it, waiting up to
// limits.RunKillGrace for killed processes to leave it.
func (c *cgroup) remove() {
	if c == nil {
		return
	}
	if c.fd >= 0 {
		unix.Close(c.fd)
		c.fd = -1
	}
	removeGroup(c.dir)
}

// removeGroup kills and removes a group; it reports whether the group is
// gone.
func removeGroup(dir string) bool {
	deadline := time.Now().Add(limits.RunKillGrace)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 50*time.Millisecond) {
		err := unix.Rmdir(dir)
		if err == nil || errors.Is(err, unix.ENOENT) {
			return true
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return false
		}
		os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
		time.Sleep(wait)
	}
}

// sweepLeftovers removes, killing what runs in them, the run groups in
// base whose making process is gone (it was killed before it could
// remove them).
func sweepLeftovers(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), runGroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		parts := strings.Split(rest, ".")
		if len(parts) != 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[0])
		if err != nil || (pid > 0 && startTime(pid) == parts[1]) {
			continue
		}
		removeGroup(filepath.Join(base, e.Name()))
	}
}
