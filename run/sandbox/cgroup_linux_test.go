package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupHere is this process's cgroup v2 directory when this machine
// offers one it may make groups in (cgroup2 mounted, the group writable),
// found the plain way (/proc/self/mounts), or skips the test saying why:
// then the feature is not expected here, under CI too.
func cgroupHere(t *testing.T) (mount, dir string) {
	t.Helper()
	mounts, err := os.ReadFile("/proc/self/mounts")
	if err != nil {
		t.Skipf("no /proc/self/mounts: %v", err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[2] == "cgroup2" {
			mount = f[1]
		}
	}
	if mount == "" {
		t.Skip("no cgroup v2 hierarchy is mounted here: run groups are not expected")
	}
	self, _ := os.ReadFile("/proc/self/cgroup")
	for _, line := range strings.Split(string(self), "\n") {
		if g, ok := strings.CutPrefix(line, "0::"); ok {
			dir = filepath.Join(mount, g)
		}
	}
	if dir == "" {
		t.Skip("this process is in no cgroup v2 group: run groups are not expected")
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		t.Skipf("%s is not writable by this user (%v): no delegated cgroup, run groups are not expected", dir, err)
	}
	return mount, dir
}

// TestCgroupPlacement: where a delegated group is offered, the command
// runs in a group of its own below this process's, which the result names
// with the limits it did and did not get, and which is gone after.
func TestCgroupPlacement(t *testing.T) {
	mount, base := cgroupHere(t)
	for _, reduced := range []bool{false, true} {
		res := runIn(t, simpleSpec(t, "cat /proc/self/cgroup"), &Options{Reduced: reduced})
		p := res.Cgroup.Path
		if filepath.Dir(p) != base || !strings.HasPrefix(filepath.Base(p), runGroupPrefix) {
			t.Fatalf("reduced=%v: the run's cgroup is %q, want one in %s (report %+v)", reduced, p, base, res.Cgroup)
		}
		// Full containment has a cgroup namespace rooted at the group.
		want := "0::/"
		if reduced {
			want = "0::/" + strings.TrimPrefix(p, mount+"/")
		}
		if !slices.Contains(strings.Split(res.Stdout.Text, "\n"), want) {
			t.Errorf("reduced=%v: the command's /proc/self/cgroup is\n%s\nwant the line %q", reduced, res.Stdout.Text, want)
		}
		// No milli-CPUs are set: memory and pids are asked for, not cpu.
		if n := len(res.Cgroup.Applied) + len(res.Cgroup.Missing); n != 2 {
			t.Errorf("reduced=%v: %d of memory and pids are reported: %+v", reduced, n, res.Cgroup)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("reduced=%v: the run's cgroup is still there (%v)", reduced, err)
		}
	}
}

// TestCgroupEndsSetsidDaemon: a daemon that left the command's session
// and process group (reduced containment: no PID namespace) is killed with
// the run's cgroup when the command ends.
func TestCgroupEndsSetsidDaemon(t *testing.T) {
	cgroupHere(t)
	s := simpleSpec(t, daemonScript+` while [ ! -s daemon.pid ]; do sleep 0.01; done`)
	res := runIn(t, s, &Options{Reduced: true})
	if res.ExitCode != 0 || res.Cgroup.Path == "" {
		t.Fatalf("exit %d, cgroup %+v, stderr %s", res.ExitCode, res.Cgroup, res.Stderr.Text)
	}
	gone(t, daemonPID(t, s.Dir))
}

func daemonPID(t *testing.T, root string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "daemon.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestCgroupLeftoverRemoved: the group of a run whose process was killed
// (SIGKILL: no cleanup ran) is killed, daemon and all, and removed by the
// next process's first run.
func TestCgroupLeftoverRemoved(t *testing.T) {
	_, base := cgroupHere(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	parent := childProcess(t, exe, cgroupParentArg, root)
	deadline := time.Now().Add(hangGuard)
	for {
		if _, err := os.Stat(filepath.Join(root, "daemon.pid")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon never started: %s", parent.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	pid := daemonPID(t, root)
	groups, _ := filepath.Glob(filepath.Join(base, runGroupPrefix+strconv.Itoa(parent.cmd.Process.Pid)+".*"))
	if len(groups) != 1 {
		t.Fatalf("the parent's run groups: %q", groups)
	}
	must(t, parent.cmd.Process.Signal(syscall.SIGKILL))
	parent.cmd.Wait()
	// Another test process's first run may sweep the group first (go test
	// runs packages at once): then it is gone already, daemon and all.
	if b, err := os.ReadFile(filepath.Join(groups[0], "cgroup.procs")); err == nil && !strings.Contains(string(b), strconv.Itoa(pid)) {
		t.Fatalf("the daemon %d is not in the left group: %q", pid, b)
	}
	next := childProcess(t, exe, runTrueArg, t.TempDir())
	if err := next.cmd.Wait(); err != nil {
		t.Fatalf("the next run: %v %s", err, next.stderr.String())
	}
	gone(t, pid)
	if _, err := os.Stat(groups[0]); !os.IsNotExist(err) {
		t.Errorf("the left group is still there (%v)", err)
	}
}

// TestApplyLimits: the limits of the controllers a group has are written,
// the others reported with why, on a directory laid out as a cgroup.
func TestApplyLimits(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(parent, "cgroup.controllers"), []byte("cpu memory pids io\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("memory cpu\n"), 0o644))
	l := Limits{MemoryBytes: 1 << 30, Processes: 400, MilliCPUs: 1500}
	rep := applyLimits(dir, l)
	if want := []string{"memory.max=1073741824", "cpu.max=150000 100000"}; !slices.Equal(rep.Applied, want) {
		t.Errorf("applied %q, want %q", rep.Applied, want)
	}
	if len(rep.Missing) != 1 || !strings.HasPrefix(rep.Missing[0], "pids: the controller is available to "+parent+" but not enabled") {
		t.Errorf("missing %q", rep.Missing)
	}
	for file, want := range map[string]string{"memory.max": "1073741824", "cpu.max": "150000 100000"} {
		if b, err := os.ReadFile(filepath.Join(dir, file)); err != nil || string(b) != want {
			t.Errorf("%s = %q %v, want %q", file, b, err, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pids.max")); err == nil {
		t.Errorf("pids.max written without the controller")
	}
	// Not delegated at all: every limit is missing, saying so; without
	// milli-CPUs no CPU bandwidth is asked for.
	must(t, os.WriteFile(filepath.Join(parent, "cgroup.controllers"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), nil, 0o644))
	rep = applyLimits(dir, Limits{MemoryBytes: 1, Processes: 301, MilliCPUs: 1000})
	if len(rep.Applied) != 0 || len(rep.Missing) != 3 || !strings.Contains(rep.Missing[0], "not available to "+parent) {
		t.Errorf("report %+v", rep)
	}
	if w := wantedLimits(Limits{MemoryBytes: 1, Processes: 1}); len(w) != 2 || w[1].file != "pids.max" {
		t.Errorf("without milli-CPUs, wanted %+v (no cpu.max)", w)
	}
}

func TestUnescapeMount(t *testing.T) {
	for in, want := range map[string]string{
		"/sys/fs/cgroup":     "/sys/fs/cgroup",
		`/mnt/with\040space`: "/mnt/with space",
		`/mnt/back\134slash`: `/mnt/back\slash`,
		`/mnt/cut\04`:        `/mnt/cut\04`,
		`/mnt/not\999octal`:  `/mnt/not\999octal`,
		`/mnt/end\040`:       "/mnt/end ",
	} {
		if got := unescapeMount(in); got != want {
			t.Errorf("unescapeMount(%q) = %q, want %q", in, got, want)
		}
	}
}
