package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	if filepath.Base(dir) == hostLeaf {
		dir = filepath.Dir(dir) // this process moved into its leaf (delegate)
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
// the others reported with why and what a host can do, on a directory
// laid out as a cgroup.
func TestApplyLimits(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(parent, "cgroup.controllers"), []byte("cpu memory pids io\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("memory cpu\n"), 0o644))
	l := Limits{MemoryBytes: 1 << 30, Processes: 400, MilliCPUs: 1500}
	rep := applyLimits(dir, l, cgroupHome{dir: parent, unenabled: "the reason delegate gave"})
	if want := []string{"memory.max=1073741824", "cpu.max=150000 100000"}; !slices.Equal(rep.Applied, want) {
		t.Errorf("applied %q, want %q", rep.Applied, want)
	}
	if len(rep.Missing) != 1 || !strings.HasPrefix(rep.Missing[0], "pids: the controller is available to "+parent+" but not enabled in its cgroup.subtree_control: the reason delegate gave; ") {
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
	// Not delegated at all: every limit is missing, saying why (bound to
	// a v1 hierarchy, or not delegated) and what a host can do; without
	// milli-CPUs no CPU bandwidth is asked for.
	must(t, os.WriteFile(filepath.Join(parent, "cgroup.controllers"), nil, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), nil, 0o644))
	rep = applyLimits(dir, Limits{MemoryBytes: 1, Processes: 301, MilliCPUs: 1000}, cgroupHome{dir: parent, v1: []string{"cpu", "cpuacct", "memory"}})
	if len(rep.Applied) != 0 || len(rep.Missing) != 3 {
		t.Fatalf("report %+v", rep)
	}
	for i, want := range []string{
		"memory: the controller is bound to a cgroup v1 hierarchy here (a hybrid layout), where cgroup v2 cannot use it; a host gets it by booting with the unified hierarchy alone",
		"pids: the controller is not delegated to " + parent + " (its cgroup.controllers does not list it); " + delegateAdvice + "; ",
		"cpu: the controller is bound to a cgroup v1 hierarchy",
	} {
		if !strings.HasPrefix(rep.Missing[i], want) {
			t.Errorf("missing[%d] = %q, want it to start %q", i, rep.Missing[i], want)
		}
	}
	if w := wantedLimits(Limits{MemoryBytes: 1, Processes: 1}); len(w) != 2 || w[1].file != "pids.max" {
		t.Errorf("without milli-CPUs, wanted %+v (no cpu.max)", w)
	}
}

// fakeKernel stands, behind cgroupWrite, for the kernel over a directory
// laid out as a cgroup: cgroup v2's no-internal-process rule (EBUSY for a
// group holding processes that enables controllers, and for a process
// moved into a group that has them), controllers offered by
// cgroup.controllers, a process in one group at a time. The processes of
// the top group are in its cgroup.procs file, those of the groups below
// in leaves (their directories stay empty, so that rmdir works as on the
// kernel's); refuse, when set, answers a write first.
type fakeKernel struct {
	root   string
	leaves map[string][]string
	refuse func(file, value string) error
}

func (k *fakeKernel) install(t *testing.T) {
	old := cgroupWrite
	cgroupWrite = k.write
	t.Cleanup(func() { cgroupWrite = old })
}

func (k *fakeKernel) write(file, value string) error {
	if k.refuse != nil {
		if err := k.refuse(file, value); err != nil {
			return err
		}
	}
	dir := filepath.Dir(file)
	switch filepath.Base(file) {
	case "cgroup.subtree_control":
		c, _ := strings.CutPrefix(value, "+")
		if procs, _ := fields(dir, "cgroup.procs"); len(procs) > 0 {
			return unix.EBUSY
		}
		if offered, _ := fields(dir, "cgroup.controllers"); !slices.Contains(offered, c) {
			return unix.ENOENT
		}
		on, _ := fields(dir, "cgroup.subtree_control")
		return os.WriteFile(file, []byte(strings.Join(append(on, c), " ")), 0o644)
	case "cgroup.procs":
		if on, _ := fields(dir, "cgroup.subtree_control"); len(on) > 0 && dir == k.root {
			return unix.EBUSY
		}
		for leaf, procs := range k.leaves {
			k.leaves[leaf] = slices.DeleteFunc(procs, func(p string) bool { return p == value })
		}
		procs, _ := fields(k.root, "cgroup.procs")
		procs = slices.DeleteFunc(procs, func(p string) bool { return p == value })
		if dir != k.root {
			k.leaves[dir] = append(k.leaves[dir], value)
		} else {
			procs = append(procs, value)
		}
		return os.WriteFile(filepath.Join(k.root, "cgroup.procs"), []byte(strings.Join(procs, "\n")), 0o644)
	}
	return os.WriteFile(file, []byte(value), 0)
}

// TestDelegate: on a fake cgroup tree, the controllers a group offers are
// enabled for its run groups, the host process moving into a leaf group
// when it alone keeps them off; when that cannot be done everything is
// left as it was and the reason says why and what a host can do.
func TestDelegate(t *testing.T) {
	const self = 4100
	busy := func(file, value string) error {
		if strings.HasSuffix(file, "subtree_control") {
			return unix.EBUSY
		}
		return nil
	}
	for _, tc := range []struct {
		name               string
		root               bool // no cgroup.type: the hierarchy's root
		controllers, procs string
		leafBefore         bool
		undelegated        bool // writable, not marked delegated
		refuse             func(file, value string) error
		why                []string // "" when none
		enabled, dirProcs  string
		leafProcs          string // "-" for no leaf group
	}{
		{name: "alone: moves into the leaf", controllers: "cpu io memory pids", procs: "4100",
			enabled: "memory pids cpu", dirProcs: "", leafProcs: "4100"},
		{name: "no process in the group", controllers: "memory pids", procs: "",
			enabled: "memory pids", leafProcs: "-"},
		{name: "nothing offered", controllers: "io", procs: "4100",
			dirProcs: "4100", leafProcs: "-"},
		{name: "the leaf is left from before", controllers: "pids", procs: "4100", leafBefore: true,
			enabled: "pids", leafProcs: "4100"},
		{name: "other processes", controllers: "memory pids cpu", procs: "7\n4100\n8\n9\n10",
			why:      []string{" holds processes, and cgroup v2 enables controllers for a group's children only while none sits in the group itself; besides this process it holds 4 other processes (PID 7, 8, 9, ...), which capkit does not move", delegateAdvice},
			dirProcs: "7 4100 8 9 10", leafProcs: "-"},
		{name: "writable, not marked delegated", controllers: "memory pids cpu", procs: "4100", undelegated: true,
			why:      []string{" holds processes, ", "; it is writable but not marked delegated (systemd sets the extended attribute trusted.delegate", delegateAdvice},
			dirProcs: "4100", leafProcs: "-"},
		{name: "one other process outside the PID namespace", controllers: "memory", procs: "4100\n0",
			why:      []string{"besides this process it holds 1 other process outside this PID namespace,"},
			dirProcs: "4100 0", leafProcs: "-"},
		{name: "moving is not permitted", controllers: "memory pids cpu", procs: "4100",
			refuse: func(file, _ string) error {
				if strings.HasSuffix(file, hostLeaf+"/cgroup.procs") {
					return unix.EACCES
				}
				return nil
			},
			why:      []string{"this process cannot be moved into the leaf group ", "(permission denied); " + delegateAdvice},
			dirProcs: "4100", leafProcs: "-"},
		{name: "enabling is not permitted", controllers: "memory pids cpu", procs: "",
			refuse: func(file, _ string) error {
				if strings.HasSuffix(file, "subtree_control") {
					return unix.EPERM
				}
				return nil
			},
			why:       []string{"/cgroup.subtree_control refused +memory (operation not permitted), +pids (operation not permitted), +cpu (operation not permitted); " + delegateAdvice},
			leafProcs: "-"},
		{name: "still busy after the move: moves back", controllers: "memory pids cpu", procs: "4100", refuse: busy,
			why:      []string{"this process moved into the leaf group ", "yet ", "/cgroup.subtree_control refused +memory (device or resource busy); "},
			dirProcs: "4100", leafProcs: "-"},
		{name: "still busy, the leaf from before stays", controllers: "memory", procs: "4100", refuse: busy, leafBefore: true,
			why:      []string{"refused +memory (device or resource busy)"},
			dirProcs: "4100", leafProcs: ""},
		{name: "the hierarchy's root", root: true, controllers: "cpu memory pids", procs: "4100",
			why:      []string{" is the cgroup hierarchy's root group, whose controllers capkit leaves to the system; a host enables memory, pids, cpu there (+memory +pids +cpu in its cgroup.subtree_control), or gives capkit a cgroup of its own by " + delegateHow},
			dirProcs: "4100", leafProcs: "-"},
		{name: "one refused after the move", controllers: "memory pids cpu", procs: "4100",
			refuse: func(file, value string) error {
				if value == "+cpu" {
					return unix.EINVAL
				}
				return nil
			},
			why:     []string{"/cgroup.subtree_control refused +cpu (invalid argument); "},
			enabled: "memory pids", leafProcs: "4100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			k := &fakeKernel{root: dir, leaves: map[string][]string{}, refuse: tc.refuse}
			k.install(t)
			old := cgroupDelegated
			cgroupDelegated = func(string) bool { return !tc.undelegated }
			t.Cleanup(func() { cgroupDelegated = old })
			must(t, os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte(tc.controllers), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), nil, 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(tc.procs), 0o644))
			if !tc.root {
				must(t, os.WriteFile(filepath.Join(dir, "cgroup.type"), []byte("domain\n"), 0o644))
			}
			leaf := filepath.Join(dir, hostLeaf)
			if tc.leafBefore {
				must(t, os.Mkdir(leaf, 0o755))
			}
			why := delegate(dir, self, runControllers)
			if len(tc.why) == 0 && why != "" {
				t.Errorf("why %q, want none", why)
			}
			for _, w := range tc.why {
				if !strings.Contains(why, w) {
					t.Errorf("why %q, want it to hold %q", why, w)
				}
			}
			if len(tc.why) > 0 && !strings.HasPrefix(why, dir) && !strings.HasPrefix(why, "this process moved") {
				t.Errorf("why %q does not name the group", why)
			}
			if got, _ := fields(dir, "cgroup.subtree_control"); strings.Join(got, " ") != tc.enabled {
				t.Errorf("enabled %q, want %q", got, tc.enabled)
			}
			if got, _ := fields(dir, "cgroup.procs"); strings.Join(got, " ") != tc.dirProcs {
				t.Errorf("the group holds %q, want %q", got, tc.dirProcs)
			}
			got := strings.Join(k.leaves[leaf], " ")
			switch _, err := os.Stat(leaf); {
			case tc.leafProcs == "-" && err == nil:
				t.Errorf("the leaf group is there (holding %q)", got)
			case tc.leafProcs != "-" && err != nil:
				t.Errorf("no leaf group: %v", err)
			case tc.leafProcs != "-" && got != tc.leafProcs:
				t.Errorf("the leaf holds %q, want %q", got, tc.leafProcs)
			}
		})
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

var testGroupSeq int

// testGroup makes a group below base for one test, removed after it with
// the groups made in it (their processes ended first).
func testGroup(t *testing.T, base string) string {
	t.Helper()
	testGroupSeq++
	g := filepath.Join(base, "capkit-test."+strconv.Itoa(os.Getpid())+"."+strconv.Itoa(testGroupSeq))
	must(t, os.Mkdir(g, 0o755))
	t.Cleanup(func() {
		subs, _ := filepath.Glob(filepath.Join(g, "*", "cgroup.procs"))
		for _, s := range subs {
			unix.Rmdir(filepath.Dir(s))
		}
		if err := unix.Rmdir(g); err != nil {
			t.Errorf("the test group %s cannot be removed: %v", g, err)
		}
	})
	return g
}

// startIn starts a process that sleeps in the group g, killed after the
// test.
func startIn(t *testing.T, g string) int {
	t.Helper()
	fd, err := unix.Open(g, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd.Process.Pid
}

// realController is a controller enabled for the groups made in base.
// When base enables none and is the hierarchy's root (no cgroup.type:
// the root is exempt from the no-internal-process rule), it enables one
// base offers for the test; otherwise it skips.
func realController(t *testing.T, base string) string {
	t.Helper()
	if on, _ := fields(base, "cgroup.subtree_control"); len(on) > 0 {
		return on[0]
	}
	offered, _ := fields(base, "cgroup.controllers")
	if _, err := os.Stat(filepath.Join(base, "cgroup.type")); err == nil || len(offered) == 0 {
		t.Skipf("%s enables no controller for its groups and cannot enable one for the test (offered %q; it is not the hierarchy's root)", base, offered)
	}
	c := offered[0]
	must(t, os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte("+"+c), 0))
	t.Cleanup(func() {
		if err := os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte("-"+c), 0); err != nil {
			t.Errorf("the test enabled %s in %s and cannot disable it: %v", c, base, err)
		}
	})
	return c
}

// homeArg: print the group run groups are made in (findCgroup) and exit.
const homeArg = "__cgroup_home"

func init() {
	if len(os.Args) == 2 && os.Args[1] == homeArg {
		h := findCgroup()
		fmt.Print(h.dir, h.why)
		os.Exit(0)
	}
}

// TestDelegateRealCgroup: on this machine's cgroup v2, a group that holds
// only the host process (here a stand-in) refuses its controllers to its
// children (EBUSY) until the process moves into the leaf group, and then
// its run groups get them; a group that holds another process is left as
// it was.
func TestDelegateRealCgroup(t *testing.T) {
	_, base := cgroupHere(t)
	c := realController(t, base)
	t.Run("alone", func(t *testing.T) {
		g := testGroup(t, base)
		if cgroupDelegated(g) {
			t.Fatalf("%s is taken for delegated before it is marked", g)
		}
		// Marked as systemd marks a group it delegates.
		if err := unix.Setxattr(g, "trusted.delegate", []byte("1"), 0); err != nil {
			t.Skipf("the test group cannot be marked delegated: %v", err)
		}
		pid := startIn(t, g)
		if err := os.WriteFile(filepath.Join(g, "cgroup.subtree_control"), []byte("+"+c), 0); !errors.Is(err, unix.EBUSY) {
			t.Fatalf("enabling %s in a group holding a process: %v, want EBUSY", c, err)
		}
		if why := delegate(g, pid, []string{c}); why != "" {
			t.Fatalf("delegate: %s", why)
		}
		if on, _ := fields(g, "cgroup.subtree_control"); !slices.Equal(on, []string{c}) {
			t.Errorf("enabled %q, want %s", on, c)
		}
		if p, _ := fields(g, "cgroup.procs"); len(p) != 0 {
			t.Errorf("the group still holds %q", p)
		}
		if p, _ := fields(filepath.Join(g, hostLeaf), "cgroup.procs"); !slices.Equal(p, []string{strconv.Itoa(pid)}) {
			t.Errorf("the leaf holds %q, want %d", p, pid)
		}
		run := filepath.Join(g, runGroupPrefix+"test")
		must(t, os.Mkdir(run, 0o755))
		if got, _ := fields(run, "cgroup.controllers"); !slices.Contains(got, c) {
			t.Errorf("a run group beside the leaf has controllers %q, want %s", got, c)
		}
		// A process the moved one starts (in the leaf) makes its run
		// groups beside the leaf too.
		exe, err := os.Executable()
		must(t, err)
		fd, err := unix.Open(filepath.Join(g, hostLeaf), unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		defer unix.Close(fd)
		cmd := exec.Command(exe, homeArg)
		cmd.SysProcAttr = &syscall.SysProcAttr{UseCgroupFD: true, CgroupFD: fd}
		if out, err := cmd.Output(); err != nil || string(out) != g {
			t.Errorf("a process started in the leaf makes run groups in %q (%v), want %s", out, err, g)
		}
	})
	t.Run("another process", func(t *testing.T) {
		g := testGroup(t, base)
		pid, other := startIn(t, g), startIn(t, g)
		why := delegate(g, pid, []string{c})
		if want := fmt.Sprintf("besides this process it holds 1 other process (PID %d), which capkit does not move", other); !strings.Contains(why, want) {
			t.Errorf("why %q, want it to hold %q", why, want)
		}
		if on, _ := fields(g, "cgroup.subtree_control"); len(on) != 0 {
			t.Errorf("enabled %q", on)
		}
		if p, _ := fields(g, "cgroup.procs"); len(p) != 2 {
			t.Errorf("the group holds %q, want both processes", p)
		}
		if _, err := os.Stat(filepath.Join(g, hostLeaf)); err == nil {
			t.Errorf("a leaf group was left")
		}
	})
}

// withHome makes run groups in h for one test.
func withHome(t *testing.T, h cgroupHome) {
	old := cgroupBase
	cgroupBase = func() cgroupHome { return h }
	t.Cleanup(func() { cgroupBase = old })
}

// TestCgroupStartFailure: when the run's group cannot be made, or made
// but not entered, the command runs without it in the host process's
// group, the result and its notes say why, and no group is left behind.
func TestCgroupStartFailure(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	must(t, os.WriteFile(file, nil, 0o644))
	type setup func(t *testing.T) (home string, why []string)
	cases := []struct {
		name string
		home setup
	}{
		{"cannot be made", func(t *testing.T) (string, []string) {
			return filepath.Join(file, "group"), []string{" cannot be made (", "not a directory)"}
		}},
		{"no cgroup.kill", func(t *testing.T) (string, []string) {
			return t.TempDir(), []string{"the kernel has no cgroup.kill"}
		}},
		{"the kernel refuses a new group", func(t *testing.T) (string, []string) {
			_, base := cgroupHere(t)
			g := testGroup(t, base)
			must(t, os.WriteFile(filepath.Join(g, "cgroup.max.descendants"), []byte("0"), 0))
			return g, []string{" cannot be made (", "resource temporarily unavailable)"}
		}},
		{"cannot be entered", func(t *testing.T) (string, []string) {
			// A group made beside a threaded one is "domain invalid": no
			// process can join it.
			_, base := cgroupHere(t)
			g := testGroup(t, base)
			must(t, os.Mkdir(filepath.Join(g, "threaded"), 0o755))
			must(t, os.WriteFile(filepath.Join(g, "threaded", "cgroup.type"), []byte("threaded"), 0))
			return g, []string{"the helper cannot start in " + filepath.Join(g, runGroupPrefix), "operation not supported"}
		}},
	}
	for _, tc := range cases {
		for _, reduced := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/reduced=%v", tc.name, reduced), func(t *testing.T) {
				home, why := tc.home(t)
				before, _ := os.ReadDir(home)
				withHome(t, cgroupHome{dir: home})
				res := runIn(t, simpleSpec(t, "cat /proc/self/cgroup; echo ran"), &Options{Reduced: reduced})
				if res.ExitCode != 0 || !strings.HasSuffix(res.Stdout.Text, "ran\n") || strings.Contains(res.Stdout.Text, runGroupPrefix) {
					t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout.Text, res.Stderr.Text)
				}
				if res.Cgroup.Path != "" || len(res.Cgroup.Applied) != 0 || len(res.Cgroup.Missing) != 1 {
					t.Fatalf("cgroup report %+v", res.Cgroup)
				}
				note := "cgroup limit not applied: " + res.Cgroup.Missing[0]
				if !slices.Contains(res.Notes, note) || !strings.HasPrefix(note, "cgroup limit not applied: memory, pids, cpu: no cgroup to run in: ") {
					t.Errorf("notes %q, want %q", res.Notes, note)
				}
				for _, w := range why {
					if !strings.Contains(note, w) {
						t.Errorf("note %q, want it to hold %q", note, w)
					}
				}
				if reduced && !slices.Contains(res.Notes, reducedWithoutCgroup) {
					t.Errorf("notes %q do not say how the command's processes are ended without a cgroup", res.Notes)
				}
				if after, _ := os.ReadDir(home); len(after) != len(before) {
					t.Errorf("left in %s: %v (before: %v)", home, after, before)
				}
			})
		}
	}
}

func TestParseSelfCgroup(t *testing.T) {
	hybrid := "9:name=systemd:/\n4:memory:/a/b\n2:cpu,cpuacct:/\n0::/c\n"
	if g, ok, v1 := parseSelfCgroup(hybrid); g != "/c" || !ok || !slices.Equal(v1, []string{"name=systemd", "memory", "cpu", "cpuacct"}) {
		t.Errorf("hybrid: %q %v %q", g, ok, v1)
	}
	if g, ok, v1 := parseSelfCgroup("0::/\n"); g != "/" || !ok || len(v1) != 0 {
		t.Errorf("unified: %q %v %q", g, ok, v1)
	}
	if _, ok, v1 := parseSelfCgroup("3:pids:/x\n"); ok || !slices.Equal(v1, []string{"pids"}) {
		t.Errorf("v1 only: %v %q", ok, v1)
	}
}
