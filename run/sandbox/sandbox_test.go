package sandbox

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox/internal/helper"
)

func simpleSpec(t *testing.T, script string) *Spec {
	root := t.TempDir()
	return &Spec{Argv: []string{"/bin/sh", "-c", script}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}}
}

func TestExitCodeAndStdin(t *testing.T) {
	for _, mode := range []bool{false, true} {
		res := runIn(t, simpleSpec(t, "cat; exit 3"), &Options{Stdin: []byte("from the call\n"), Reduced: mode})
		if res.ExitCode != 3 || res.Stdout.Text != "from the call\n" || res.Signal != "" || res.Killed {
			t.Errorf("reduced=%v: %+v", mode, res)
		}
		// Without stdin the command reads /dev/null and ends.
		res = runIn(t, simpleSpec(t, "cat; echo end"), &Options{Reduced: mode})
		if res.ExitCode != 0 || res.Stdout.Text != "end\n" {
			t.Errorf("reduced=%v: %+v", mode, res)
		}
	}
}

func TestCleanEnvironment(t *testing.T) {
	t.Setenv("CAPKIT_TEST_SECRET", "token-that-must-not-leak")
	for _, reduced := range []bool{false, true} {
		res := runIn(t, simpleSpec(t, "env | sort"), &Options{Reduced: reduced})
		var keys []string
		for _, line := range strings.Split(strings.TrimSpace(res.Stdout.Text), "\n") {
			k, _, _ := strings.Cut(line, "=")
			keys = append(keys, k)
		}
		// sh adds PWD.
		if want := []string{"HOME", "PATH", "PWD", "TMPDIR"}; !slices.Equal(keys, want) {
			t.Errorf("reduced=%v: environment %q, want the keys %q", reduced, res.Stdout.Text, want)
		}
	}
}

func TestFullContainmentView(t *testing.T) {
	res := runIn(t, simpleSpec(t, `id -u; hostname; grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status; ls /proc | grep -c -v '^[0-9]'; ls /dev`), nil)
	// /proc shows processes only (besides self and thread-self).
	want := "1000\ncapkit-sandbox\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\nSeccomp:\t2\n2\n" +
		"fd\nfull\nnull\nrandom\nstderr\nstdin\nstdout\nurandom\nzero\n"
	if res.Stdout.Text != want || res.Containment != Full {
		t.Errorf("containment %s, got:\n%s\nwant:\n%s\n%s", res.Containment, res.Stdout.Text, want, res.Stderr.Text)
	}
}

func TestRequireFull(t *testing.T) {
	s := simpleSpec(t, "echo ran > ran.txt")
	_, err := Run(context.Background(), s, &Options{Helper: helperArgv(t), Reduced: true, RequireFull: true})
	if !errors.Is(err, fault.ErrUnavailable) {
		t.Fatalf("err = %v, want unavailable", err)
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "ran.txt")); err == nil {
		t.Errorf("the command ran")
	}
}

func TestReducedIsReported(t *testing.T) {
	res := runIn(t, simpleSpec(t, "true"), &Options{Reduced: true})
	if res.Containment != Reduced || !slices.ContainsFunc(res.Notes, func(n string) bool { return strings.HasPrefix(n, "reduced containment") }) {
		t.Errorf("containment %s, notes %q", res.Containment, res.Notes)
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s := simpleSpec(t, "echo started; sleep 100")
	opts := &Options{Helper: helperArgv(t)}
	done := make(chan *Result)
	go func() {
		res, err := Run(ctx, s, opts)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	cancel()
	if res := <-done; res != nil && !res.Killed {
		t.Errorf("not killed: %+v", res)
	}
}

// TestHelperEndingBeforeExec: a helper that ends after taking its call
// but before the exec (killed or crashed by something else) is a failure
// that says nothing ran, not a result of the command.
func TestHelperEndingBeforeExec(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := simpleSpec(t, "echo ran > ran.txt")
	for _, reduced := range []bool{false, true} {
		res, err := Run(context.Background(), s, &Options{Helper: []string{exe, endsBeforeExecArg}, Reduced: reduced})
		if !errors.Is(err, fault.ErrUnavailable) || !errors.Is(err, errNotBuilt) {
			t.Errorf("reduced=%v: %v %+v, want unavailable: nothing ran", reduced, err, res)
		}
		if r := testkit.Repeated(fault.As(err).Error()); r != "" || strings.Contains(err.Error(), errNotBuilt.Error()) {
			t.Errorf("reduced=%v: %q says what happened twice", reduced, err)
		}
	}
}

// TestDescriptionBounds: a command too large to hand to the helper is
// limit, cold and warm, and nothing runs.
func TestDescriptionBounds(t *testing.T) {
	s := simpleSpec(t, "echo ran > ran.txt")
	o := &Options{Helper: helperArgv(t)}
	w := warmFor(t, s, o)
	// The call with a last argument that makes its frame the bound:
	// accepted (and refused by execve, whose bound on one argument is
	// smaller), and one byte past it.
	frame := func(last int) int {
		c := call{Argv: append(slices.Clone(s.Argv), strings.Repeat("x", last)), Dir: s.Dir, Env: s.Env, NullStdin: true}
		return len(c.Encode())
	}
	last := limits.RunMaxSpecBytes - frame(0)
	last -= frame(last) - limits.RunMaxSpecBytes // the lengths' own bytes
	if frame(last) != limits.RunMaxSpecBytes {
		t.Fatalf("no argument makes the call's frame %d bytes", limits.RunMaxSpecBytes)
	}
	for _, warm := range []*Warm{nil, w} {
		for _, past := range []int{0, 1} {
			big := *s
			big.Argv = append(slices.Clone(s.Argv), strings.Repeat("x", last+past))
			o.Warm = warm
			_, err := Run(context.Background(), &big, o)
			want := fault.ErrUnavailable
			if past == 1 {
				want = fault.ErrLimit
			}
			if !errors.Is(err, want) {
				t.Errorf("warm=%v, %d past the bound: %.200v", warm != nil, past, err)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(s.Dir, "ran.txt")); err == nil {
		t.Errorf("the command ran")
	}
}

func TestSpecCheck(t *testing.T) {
	root := t.TempDir()
	ok := func() *Spec {
		return &Spec{Argv: []string{"true"}, Dir: root, Writable: []string{root}}
	}
	for _, tc := range []struct {
		name string
		edit func(s *Spec)
		bad  bool
	}{
		{"valid", func(s *Spec) {}, false},
		{"no command", func(s *Spec) { s.Argv = nil }, true},
		{"no root", func(s *Spec) { s.Writable = nil }, true},
		{"relative root", func(s *Spec) { s.Writable = []string{"x"}; s.Dir = "x" }, true},
		{"the whole tree", func(s *Spec) { s.Writable = []string{"/"}; s.Dir = "/" }, true},
		{"the host's /tmp", func(s *Spec) { s.Writable = []string{"/tmp"}; s.Dir = "/tmp" }, true},
		{"the host's /tmp read-only", func(s *Spec) { s.ReadOnly = []string{"/tmp"} }, true},
		{"dir outside", func(s *Spec) { s.Dir = "/usr" }, true},
		{"protected outside", func(s *Spec) { s.Protected = []string{"/etc/passwd"} }, true},
		{"protected root itself", func(s *Spec) { s.Protected = []string{root} }, true},
		{"processes at least", func(s *Spec) { s.Limits.Processes = limits.RunMinProcesses }, false},
		{"processes below least", func(s *Spec) { s.Limits.Processes = limits.RunMinProcesses - 1 }, true},
		{"memory at hard", func(s *Spec) { s.Limits.MemoryBytes = limits.RunHardMemoryBytes }, false},
		{"memory past hard", func(s *Spec) { s.Limits.MemoryBytes = limits.RunHardMemoryBytes + 1 }, true},
		{"tmp past hard", func(s *Spec) { s.Limits.TmpBytes = limits.RunHardTmpBytes + 1 }, true},
		{"negative files", func(s *Spec) { s.Limits.OpenFiles = -1 }, true},
		{"milli-CPUs at hard", func(s *Spec) { s.Limits.MilliCPUs = limits.RunHardMilliCPUs }, false},
		{"milli-CPUs past hard", func(s *Spec) { s.Limits.MilliCPUs = limits.RunHardMilliCPUs + 1 }, true},
		{"milli-CPUs at least", func(s *Spec) { s.Limits.MilliCPUs = limits.RunMinMilliCPUs }, false},
		{"milli-CPUs below least", func(s *Spec) { s.Limits.MilliCPUs = limits.RunMinMilliCPUs - 1 }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok()
			tc.edit(s)
			err := s.check()
			if bad := errors.Is(err, fault.ErrInvalidInput); bad != tc.bad {
				t.Errorf("check() = %v, want invalid: %v", err, tc.bad)
			}
		})
	}
}

func TestSplitReport(t *testing.T) {
	for _, tc := range []struct {
		in      string
		notes   []string
		failure string
		execd   bool
	}{
		{"", nil, "", false},
		{helper.NotePrefix + "a\n" + helper.NotePrefix + "b\n", []string{"a", "b"}, "", false},
		{helper.NotePrefix + "a\nsandbox helper: mount failed", []string{"a"}, "sandbox helper: mount failed", false},
		{"sandbox helper: bad spec", nil, "sandbox helper: bad spec", false},
		// A note cut short by the bound is a failure, not a note.
		{helper.NotePrefix + "cut", nil, helper.NotePrefix + "cut", false},
		{helper.ExecLine + "\n", nil, "", true},
		{helper.NotePrefix + "a\n" + helper.ExecLine + "\nsandbox helper: exec x: no such file", []string{"a"}, "sandbox helper: exec x: no such file", true},
		{helper.ClosedPrefix + "/r\n" + helper.ExecLine + "\n", nil, "", true},
		// Cut short, it is not the exec.
		{helper.ExecLine, nil, helper.ExecLine, false},
	} {
		r := splitReport(tc.in)
		if !slices.Equal(r.notes, tc.notes) || r.failure != tc.failure || r.execd != tc.execd {
			t.Errorf("splitReport(%q) = %+v", tc.in, r)
		}
	}
}

// TestClosedDirectoriesNoted: full containment closes no directory of a
// root, whichever protected paths exist; reduced containment closes the
// directory holding one that exists (Landlock cannot keep one entry of a
// directory read-only alone), and the result names it; a missing one
// closes nothing.
func TestClosedDirectoriesNoted(t *testing.T) {
	script := `touch top 2>/dev/null && echo top; touch sub/deep && echo deep`
	for _, tc := range []struct {
		name    string
		reduced bool
		present []string // protected paths made before the run
		closed  bool
	}{
		{"full, capkit.toml missing", false, []string{".git"}, false},
		{"full, both missing", false, nil, false},
		{"full, all present", false, []string{".git", "capkit.toml"}, false},
		{"reduced, both missing", true, nil, false},
		{"reduced, .git present", true, []string{".git"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := simpleSpec(t, script)
			root := s.Dir
			s.Protected = []string{filepath.Join(root, ".git"), filepath.Join(root, "capkit.toml")}
			for _, d := range append([]string{"sub"}, tc.present...) {
				if d == "capkit.toml" {
					if err := os.WriteFile(filepath.Join(root, d), nil, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			res := runIn(t, s, &Options{Reduced: tc.reduced})
			want := "top\ndeep\n"
			if tc.closed {
				want = "deep\n"
			}
			if res.Stdout.Text != want {
				t.Errorf("output %q, want %q", res.Stdout.Text, want)
			}
			if got := slices.Contains(res.Closed, root); got != tc.closed {
				t.Errorf("closed %v, but the result lists %q", tc.closed, res.Closed)
			}
		})
	}
}

// TestProtectedPathThroughSymlink: a protected path reached through a
// symbolic link inside the root (planted by whoever owns the root's
// files) is not cloned from where the link points: nothing outside the
// roots enters the view.
func TestProtectedPathThroughSymlink(t *testing.T) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	const secret = "outside-secret-4711"
	if err := os.WriteFile(filepath.Join(outside, "settings.json"), []byte(secret), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside", filepath.Join(root, "conf")); err != nil {
		t.Fatal(err)
	}
	s := &Spec{Argv: []string{"/bin/sh", "-c", "cat conf/settings.json " + outside + "/settings.json; ls " + outside}, Dir: root,
		Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}, Protected: []string{filepath.Join(root, "conf", "settings.json")}}
	res := runIn(t, s, nil)
	if strings.Contains(res.Stdout.Text+res.Stderr.Text, secret) || strings.Contains(res.Stdout.Text, "settings.json") {
		t.Errorf("a file outside the roots entered the view:\nstdout %q\nstderr %q", res.Stdout.Text, res.Stderr.Text)
	}
}

// TestRootThatIsASymlink: a root replaced by a symbolic link after it was
// granted is refused, not followed to where the link points.
func TestRootThatIsASymlink(t *testing.T) {
	base := t.TempDir()
	target, root := filepath.Join(base, "elsewhere"), filepath.Join(base, "root")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, root); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	s := &Spec{Argv: []string{"/bin/true"}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}}
	_, err := Run(ctx, s, &Options{Helper: helperArgv(t)})
	if err == nil || !strings.Contains(err.Error(), "no longer a directory") {
		t.Fatalf("Run over a root that is a symbolic link: %v", err)
	}
}

// TestNestedProtectedPathStays: a protected path below a subdirectory of
// the root, present, cannot be replaced by renaming the directory holding
// it away and making a new one: full containment pins that directory (a
// mount point cannot be renamed), reduced containment closes the
// directories above it.
func TestNestedProtectedPathStays(t *testing.T) {
	for _, reduced := range []bool{false, true} {
		s := simpleSpec(t, `mv sub sub2; mkdir -p sub; echo pwned > sub/secret; echo pwned > sub/secret2; cat sub/secret; touch top && echo top`)
		root := s.Dir
		for _, d := range []string{"sub", ".git"} {
			if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		// Every protected path present: nothing closes the root itself.
		if err := os.WriteFile(filepath.Join(root, "capkit.toml"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		secret := filepath.Join(root, "sub", "secret")
		if err := os.WriteFile(secret, []byte("orig\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s.Protected = []string{secret, filepath.Join(root, ".git"), filepath.Join(root, "capkit.toml")}
		res := runIn(t, s, &Options{Reduced: reduced})
		if b, err := os.ReadFile(secret); err != nil || string(b) != "orig\n" {
			t.Errorf("reduced=%v: the protected path holds %q (%v)", reduced, b, err)
		}
		if want := map[bool]string{false: "orig\ntop\n", true: "orig\n"}[reduced]; res.Stdout.Text != want {
			t.Errorf("reduced=%v: the command printed %q, want %q", reduced, res.Stdout.Text, want)
		}
		if _, err := os.Stat(filepath.Join(root, "sub2")); err == nil {
			t.Errorf("reduced=%v: the directory holding the protected path was renamed", reduced)
		}
		// In full containment its own directory stays open: other files
		// there can be made (reduced containment closes it too).
		if b, err := os.ReadFile(filepath.Join(root, "sub", "secret2")); !reduced && (err != nil || string(b) != "pwned\n") {
			t.Errorf("reduced=%v: an ordinary file beside the protected one: %q (%v)", reduced, b, err)
		}
	}
}

// TestPlaceRefusesSwappedLinks: a process on the host swapping the
// directory that holds a protected path for a symbolic link while
// containers are built never makes the helper create anything where the
// link points (it walks to each mount point beneath the new root, with no
// link on the way, and makes mount points only in its own tmpfs).
func TestPlaceRefusesSwappedLinks(t *testing.T) {
	// Outside /tmp: the helper assembles the new root on /tmp, which
	// covers the host's /tmp in its mount namespace.
	out, err := os.MkdirTemp("/var/tmp", "capkit-place-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	root := filepath.Join(t.TempDir(), "root")
	sub, moved := filepath.Join(root, "sub"), filepath.Join(root, "subreal")
	for _, d := range []string{root, sub} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sub, "secret"), []byte("orig"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			os.Rename(sub, moved)
			os.Symlink(out, sub)
			time.Sleep(50 * time.Microsecond)
			os.Remove(sub)
			os.Rename(moved, sub)
			time.Sleep(50 * time.Microsecond)
		}
	}()
	defer func() { stop.Store(true); <-done }()
	for i := range 100 {
		s := &Spec{Argv: []string{"/bin/true"}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"},
			Protected: []string{filepath.Join(sub, "secret")}}
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		Run(ctx, s, &Options{Helper: helperArgv(t)}) // may fail: the view is changing under it
		cancel()
		if entries, _ := os.ReadDir(out); len(entries) > 0 {
			t.Fatalf("run %d: the helper created %s in %s, outside the roots", i, entries[0].Name(), out)
		}
	}
}

// TestAsUnprivilegedUser runs tests of both containments again as a user
// with no capability, as most hosts run capkit: the tests run as root
// here, where a step that needs a capability (dropping the bounding set)
// would pass unnoticed.
func TestAsUnprivilegedUser(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("already unprivileged: the other tests cover it")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A copy any user may run (the test binary's own directory is the
	// build's, private to root), in a directory any user may search.
	dir, err := os.MkdirTemp("", "capkit-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-test.count", "1", "-test.short",
		"-test.run", "^(TestExitCodeAndStdin|TestCleanEnvironment|TestFullContainmentView|TestCanceled|TestClosedDirectoriesNoted|TestNestedProtectedPathStays|"+
			"TestRootsStayOpen|TestPlantedNamesQuarantined|TestHeldPathsStayReadOnly|TestQuarantineOnAnotherFilesystem|TestGuardUnreadableRoot|"+
			"TestScratchRemovedWhateverModes|TestScratchSwept|TestScratchBound|TestRootsUnderTmp|TestRootsUnderTmpAttacked)$")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + os.TempDir()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("as user 65534: %v\n%s", err, out)
	}
}

// TestClosedDirectoryPastTheRuleBound: in reduced containment, a
// directory closed to keep an existing protected path read-only, with
// more entries than a run may have Landlock rules, fails, naming it and
// what keeps it open; full containment runs there.
func TestClosedDirectoryPastTheRuleBound(t *testing.T) {
	s := simpleSpec(t, "true")
	for i := range limits.RunMaxLandlockRules {
		if err := os.WriteFile(filepath.Join(s.Dir, "f"+strconv.Itoa(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Mkdir(filepath.Join(s.Dir, ".git"), 0o755))
	s.Protected = []string{filepath.Join(s.Dir, ".git")}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	_, err := Run(ctx, s, &Options{Helper: helperArgv(t), Reduced: true})
	if err == nil || !strings.Contains(err.Error(), s.Dir+" is closed") || !strings.Contains(err.Error(), "full containment") {
		t.Fatalf("a closed root of %d entries: %v", limits.RunMaxLandlockRules, err)
	}
	if res := runIn(t, s, nil); res.ExitCode != 0 {
		t.Errorf("full containment: %+v", res)
	}
}
