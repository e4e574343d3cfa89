package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// warmFor returns a Warm holding a helper built for s's view (after one
// cold run of /bin/true over it), with its container built.
func warmFor(t testing.TB, s *Spec, o *Options) *Warm {
	t.Helper()
	w := NewWarm()
	t.Cleanup(w.Close)
	first := *s
	first.Argv = []string{"/bin/true"}
	oo := *o
	oo.Warm, oo.Stdin = w, nil
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if res, err := Run(ctx, &first, &oo); err != nil || res.ExitCode != 0 || res.warm {
		t.Fatalf("the first run: %v %+v", err, res)
	}
	waitWarm(t, w)
	return w
}

// waitWarm waits until w's helper has built its container and returns it.
func waitWarm(t testing.TB, w *Warm) *helperProc {
	t.Helper()
	w.mu.Lock()
	p := w.next
	w.mu.Unlock()
	if p == nil {
		t.Fatal("no helper is being started")
	}
	select {
	case <-p.started:
	case <-time.After(hangGuard):
		t.Fatal("the helper's start hangs")
	}
	if p.h == nil {
		t.Fatal("the warm helper could not be started")
	}
	select {
	case <-p.h.ready:
	case <-time.After(hangGuard):
		t.Fatal("the helper's container is never built")
	}
	if p.h.failure != "" {
		t.Fatalf("the warm helper failed: %s", p.h.failure)
	}
	return p.h
}

// gone waits until a process has ended (reaped, or a zombie nobody
// reaps, all its threads gone: they hold its descriptors until then),
// failing at the hang guard.
func gone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*", pid))
		if err != nil || (strings.Contains(string(b), ") Z ") && len(tasks) <= 1) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d is still running", pid)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestWarmHelperIsUsed: the call runs in the helper started ahead (the
// command is in that helper's PID namespace), with the call's stdin, exit
// code and output, and the next helper is started after it.
func TestWarmHelperIsUsed(t *testing.T) {
	s := simpleSpec(t, "readlink /proc/self/ns/pid; cat; exit 3")
	o := &Options{Helper: helperArgv(t), Stdin: []byte("from the call\n")}
	o.Warm = warmFor(t, s, o)
	h := waitWarm(t, o.Warm)
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	res := runIn(t, s, o)
	if !res.warm || res.Stdout.Text != ns+"\nfrom the call\n" || res.ExitCode != 3 {
		t.Errorf("warm %v, exit %d, stdout %q, want %q in namespace %s", res.warm, res.ExitCode, res.Stdout.Text, "from the call", ns)
	}
	if next := waitWarm(t, o.Warm); next == h {
		t.Errorf("the used helper is held again")
	}
	// Without stdin the command reads /dev/null.
	s.Argv = []string{"/bin/sh", "-c", "cat; readlink /proc/self/fd/0"}
	o.Stdin = nil
	if res := runIn(t, s, o); !res.warm || res.Stdout.Text != "/dev/null\n" {
		t.Errorf("warm %v, stdout %q", res.warm, res.Stdout.Text)
	}
}

// TestWarmHelperRunsNothingBeforeItsCall: a helper waiting for its call is
// the helper itself, with no child.
func TestWarmHelperRunsNothingBeforeItsCall(t *testing.T) {
	s := simpleSpec(t, "true")
	o := &Options{Helper: helperArgv(t)}
	h := waitWarm(t, warmFor(t, s, o))
	pid := h.cmd.Process.Pid
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"); strings.Join(got, " ") != strings.Join(o.Helper, " ") {
		t.Errorf("the waiting helper runs %q", got)
	}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, f := range tasks {
		if b, _ := os.ReadFile(f); len(strings.TrimSpace(string(b))) > 0 {
			t.Errorf("the waiting helper has children: %s", b)
		}
	}
}

// TestWarmHelperWaitsRestricted: a helper waiting for its call has
// already dropped every capability and entered its Landlock domain and
// seccomp filter (with no_new_privs), so its call costs little more than
// the exec.
func TestWarmHelperWaitsRestricted(t *testing.T) {
	s := simpleSpec(t, "true")
	o := &Options{Helper: helperArgv(t)}
	h := waitWarm(t, warmFor(t, s, o))
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", h.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nCapEff:\t0000000000000000\n", "\nCapPrm:\t0000000000000000\n", "\nCapAmb:\t0000000000000000\n", "\nNoNewPrivs:\t1\n", "\nSeccomp:\t2\n"} {
		if !strings.Contains(string(status), want) {
			t.Errorf("the waiting helper's status lacks %q:\n%s", strings.TrimSpace(want), status)
		}
	}
}

// TestWarmAfterReply: with Options.AfterReply, Run hands over the next
// helper's start instead of starting it; the helper starts when that is
// run, and the next call uses it.
func TestWarmAfterReply(t *testing.T) {
	s := simpleSpec(t, "true")
	var later []func()
	o := &Options{Helper: helperArgv(t), AfterReply: func(f func()) { later = append(later, f) }}
	o.Warm = NewWarm()
	t.Cleanup(o.Warm.Close)
	if res := runIn(t, s, o); res.warm || len(later) != 1 {
		t.Fatalf("the first run: warm %v, %d starts handed over", res.warm, len(later))
	}
	o.Warm.mu.Lock()
	p := o.Warm.next
	o.Warm.mu.Unlock()
	select {
	case <-p.started:
		t.Fatal("the next helper started before its start was run")
	default:
	}
	later[0]()
	waitWarm(t, o.Warm)
	if res := runIn(t, s, o); !res.warm || len(later) != 2 {
		t.Errorf("the second run: warm %v, %d starts handed over", res.warm, len(later))
	}
	later[1]()
}

// TestWarmHelperForOtherRootsIsKilled: a call over other roots runs in a
// helper of its own, sees its own roots only, and the helper built for
// the old ones is killed.
func TestWarmHelperForOtherRootsIsKilled(t *testing.T) {
	a := simpleSpec(t, "true")
	must(t, os.WriteFile(filepath.Join(a.Dir, "marker.txt"), []byte("A"), 0o644))
	o := &Options{Helper: helperArgv(t)}
	o.Warm = warmFor(t, a, o)
	old := waitWarm(t, o.Warm).cmd.Process.Pid
	b := simpleSpec(t, "cat marker.txt "+filepath.Join(a.Dir, "marker.txt"))
	must(t, os.WriteFile(filepath.Join(b.Dir, "marker.txt"), []byte("B"), 0o644))
	res := runIn(t, b, o)
	if res.warm || res.Stdout.Text != "B" {
		t.Errorf("warm %v, stdout %q (want B only)", res.warm, res.Stdout.Text)
	}
	gone(t, old)
}

// TestWarmHelperOverReplacedTree: a helper built before a root was
// replaced, or a protected path made, on the host is not used.
func TestWarmHelperOverReplacedTree(t *testing.T) {
	t.Run("root replaced", func(t *testing.T) {
		s := simpleSpec(t, "cat marker.txt")
		must(t, os.WriteFile(filepath.Join(s.Dir, "marker.txt"), []byte("old"), 0o644))
		o := &Options{Helper: helperArgv(t)}
		o.Warm = warmFor(t, s, o)
		must(t, os.Rename(s.Dir, s.Dir+".old"))
		must(t, os.Mkdir(s.Dir, 0o755))
		must(t, os.WriteFile(filepath.Join(s.Dir, "marker.txt"), []byte("new"), 0o644))
		if res := runIn(t, s, o); res.warm || res.Stdout.Text != "new" {
			t.Errorf("warm %v, stdout %q", res.warm, res.Stdout.Text)
		}
	})
	t.Run("protected path made", func(t *testing.T) {
		s := simpleSpec(t, "echo planted > .git/config; cat .git/config")
		git := filepath.Join(s.Dir, ".git")
		s.Protected = []string{git}
		o := &Options{Helper: helperArgv(t)}
		o.Warm = warmFor(t, s, o)
		must(t, os.Mkdir(git, 0o755))
		if res := runIn(t, s, o); res.warm {
			t.Errorf("the helper built before .git existed was used")
		}
		if _, err := os.Stat(filepath.Join(git, "config")); err == nil {
			t.Errorf("the command wrote into the protected .git")
		}
	})
}

// TestWarmHelperDiesWithItsParent: a helper waiting for its call is
// killed when the process that started it is.
func TestWarmHelperDiesWithItsParent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := childProcess(t, exe, warmParentArg, t.TempDir())
	pid := parent.readInt(t)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err != nil || !strings.Contains(string(b), HelperArg) {
		t.Fatalf("process %d is not the waiting helper: %q %v", pid, b, err)
	}
	must(t, parent.cmd.Process.Signal(syscall.SIGKILL))
	parent.cmd.Wait()
	gone(t, pid)
}

// TestWarmClose: Close kills the helper held.
func TestWarmClose(t *testing.T) {
	s := simpleSpec(t, "true")
	o := &Options{Helper: helperArgv(t)}
	w := warmFor(t, s, o)
	pid := waitWarm(t, w).cmd.Process.Pid
	w.Close()
	gone(t, pid)
	o.Warm = w
	if res := runIn(t, s, o); res.warm {
		t.Errorf("a closed Warm was used")
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next != nil {
		t.Errorf("a closed Warm started a helper")
	}
}

// TestWarmHelperKilledWhileWaiting: a warm helper that died before its
// call (killed by something else) ran nothing, and the call runs in a
// helper of its own.
func TestWarmHelperKilledWhileWaiting(t *testing.T) {
	s := simpleSpec(t, "echo ran")
	o := &Options{Helper: helperArgv(t)}
	o.Warm = warmFor(t, s, o)
	h := waitWarm(t, o.Warm)
	must(t, h.cmd.Process.Signal(syscall.SIGKILL))
	gone(t, h.cmd.Process.Pid)
	if res := runIn(t, s, o); res.warm || res.Stdout.Text != "ran\n" {
		t.Errorf("warm %v, stdout %q", res.warm, res.Stdout.Text)
	}
}
