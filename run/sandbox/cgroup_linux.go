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

// cgroupPeriod is cpu.max's period in microseconds (the kernel's default).
const cgroupPeriod = 100_000

// cgroup is one run's group: the helper starts inside it (CLONE_INTO_CGROUP
// through fd), its limits are written before, and it is killed whole and
// removed when the run ends.
type cgroup struct {
	dir string
	fd  int
}

// cgroupBase is the host process's cgroup v2 directory, found once, or
// why there is none to make run groups in.
var cgroupBase = sync.OnceValues(func() (base, why string) {
	base, why = findCgroup()
	if why == "" {
		sweepLeftovers(base)
	}
	return base, why
})

// findCgroup finds the cgroup v2 mount (the unified hierarchy, alone or
// beside v1 ones) and this process's group in it, and checks that new
// groups can be made and joined there.
func findCgroup() (dir, why string) {
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Sprintf("/proc/self/cgroup cannot be read (%v)", err)
	}
	var group string
	found := false
	for _, line := range strings.Split(string(self), "\n") {
		if g, ok := strings.CutPrefix(line, "0::"); ok {
			group, found = g, true
		}
	}
	if !found {
		return "", "this process is in no cgroup v2 group (only cgroup v1 hierarchies)"
	}
	mount, root, err := cgroup2Mount()
	if err != nil {
		return "", err.Error()
	}
	rel, err := filepath.Rel(root, group)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Sprintf("this process's cgroup %s is outside the mounted cgroup v2 tree (%s)", group, root)
	}
	dir = filepath.Join(mount, rel)
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return "", fmt.Sprintf("no delegated cgroup: %s is not writable by this user (%v)", dir, err)
	}
	if err := unix.Access(filepath.Join(dir, "cgroup.procs"), unix.W_OK); err != nil {
		return "", fmt.Sprintf("no delegated cgroup: %s/cgroup.procs is not writable by this user (%v), so a process cannot be moved below it", dir, err)
	}
	return dir, ""
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
	base, why := cgroupBase()
	if why != "" {
		return nil, noCgroup(why)
	}
	name := fmt.Sprintf("%s%d.%s.%d", runGroupPrefix, os.Getpid(), selfStart(), runGroupSeq.Add(1))
	dir := filepath.Join(base, name)
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
	rep := applyLimits(dir, l)
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

// applyLimits writes into the group at dir the limits of l its
// controllers offer (its cgroup.controllers lists those its parent
// enabled for its children) and reports the others with the reason.
func applyLimits(dir string, l Limits) CgroupReport {
	var rep CgroupReport
	parent := filepath.Dir(dir)
	enabled, err := controllers(dir)
	if err != nil {
		rep.Missing = append(rep.Missing, fmt.Sprintf("memory, pids, cpu: %v", err))
		return rep
	}
	available, _ := controllers(parent)
	for _, c := range wantedLimits(l) {
		switch {
		case !slices.Contains(enabled, c.controller) && slices.Contains(available, c.controller):
			rep.Missing = append(rep.Missing, fmt.Sprintf("%s: the controller is available to %s but not enabled in its cgroup.subtree_control; %s", c.controller, parent, c.what))
		case !slices.Contains(enabled, c.controller):
			rep.Missing = append(rep.Missing, fmt.Sprintf("%s: the controller is not available to %s (not delegated to it, or bound to a cgroup v1 hierarchy); %s", c.controller, parent, c.what))
		default:
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.value), 0); err != nil {
				rep.Missing = append(rep.Missing, fmt.Sprintf("%s: %s cannot be written (%v); %s", c.controller, c.file, err, c.what))
				continue
			}
			rep.Applied = append(rep.Applied, c.file+"="+c.value)
		}
	}
	return rep
}

// controllers lists a group's cgroup.controllers.
func controllers(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("%s/cgroup.controllers cannot be read (%v)", dir, err)
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
