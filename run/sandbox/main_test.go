package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox/internal/helper"
)

// TestMain lets the test binary serve as the probe the escape tests run
// inside the container, and as the processes some tests start. (It
// serves as the sandbox helper, as every program linking this package
// does, from the helper's package init.)
func TestMain(m *testing.M) {
	if len(os.Args) >= 2 {
		switch os.Args[1] {
		case probeArg:
			os.Exit(probe(os.Args[2:]))
		case warmParentArg, cgroupParentArg, runTrueArg:
			os.Exit(parentMode(os.Args[1], os.Args[2]))
		case endsBeforeExecArg:
			os.Exit(endBeforeExec())
		}
	}
	// What a command leaves at a protected name goes to the quarantine
	// in the user's state directory: a temporary one here (runIn gives
	// most runs one of their own).
	state, err := os.MkdirTemp("", "capkit-sandbox-state-")
	if err != nil {
		panic(err)
	}
	os.Setenv("XDG_STATE_HOME", state)
	code := m.Run()
	removeIn(state)
	os.Exit(code)
}

func helperArgv(t testing.TB) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, HelperArg}
}

// hangGuard is a generous bound on any one run: a test that reaches it has
// found a hang, not a slow machine.
const hangGuard = 60 * time.Second

func runIn(t *testing.T, spec *Spec, opts *Options) *Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Helper == nil {
		opts.Helper = helperArgv(t)
	}
	if opts.Quarantine == "" {
		opts.Quarantine = t.TempDir()
	}
	res, err := Run(ctx, spec, opts)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

// The test binary's parent modes: a process that runs commands and is
// then killed by the test.
const (
	// warmParentArg ROOT: start a warm helper over ROOT, print its PID,
	// and wait.
	warmParentArg = "__warm_parent"
	// cgroupParentArg ROOT: run, with reduced containment, a command that
	// leaves a setsid daemon (its PID in ROOT/daemon.pid) and waits.
	cgroupParentArg = "__cgroup_parent"
	// runTrueArg ROOT: run /bin/true over ROOT and exit.
	runTrueArg = "__run_true"
	// endsBeforeExecArg: a helper that takes its view and its call, says
	// it is ready, and exits without running anything.
	endsBeforeExecArg = "__ends_before_exec"
)

func endBeforeExec() int {
	in := os.NewFile(helper.SpecFD, "spec")
	if _, err := helper.DecodeMessage(in, limits.RunMaxSpecBytes); err != nil {
		return 1
	}
	os.NewFile(helper.ReportFD, "report").WriteString(helper.ReadyLine + "\n")
	if _, err := helper.DecodeCall(in, limits.RunMaxSpecBytes); err != nil {
		return 1
	}
	return 0
}

const daemonScript = `setsid sh -c 'echo $$ > daemon.pid.tmp; mv daemon.pid.tmp daemon.pid; exec sleep 600' </dev/null >/dev/null 2>&1 &`

func parentMode(mode, root string) int {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	s := &Spec{Argv: []string{"/bin/true"}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}}
	o := &Options{Helper: []string{exe, HelperArg}}
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	switch mode {
	case warmParentArg:
		o.Warm = NewWarm()
	case cgroupParentArg:
		s.Argv = []string{"/bin/sh", "-c", daemonScript + " sleep 600"}
		o.Reduced = true
	case runTrueArg:
		o.Reduced = true
	}
	if _, err := Run(ctx, s, o); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if mode == warmParentArg {
		o.Warm.mu.Lock()
		p := o.Warm.next
		o.Warm.mu.Unlock()
		<-p.started
		if p.h == nil {
			return 1
		}
		<-p.h.ready
		fmt.Println(p.h.cmd.Process.Pid)
		<-ctx.Done()
	}
	return 0
}

// child is a parent-mode process the test runs.
type child struct {
	cmd    *exec.Cmd
	out    *bufio.Reader
	stderr bytes.Buffer
}

func childProcess(t *testing.T, exe string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(exe, args...)}
	c.cmd.Stderr = &c.stderr
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReader(out)
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	return c
}

// readInt reads the number the child prints on a line.
func (c *child) readInt(t *testing.T) int {
	t.Helper()
	type line struct {
		s   string
		err error
	}
	got := make(chan line, 1)
	go func() { s, err := c.out.ReadString('\n'); got <- line{s, err} }()
	select {
	case l := <-got:
		n, err := strconv.Atoi(strings.TrimSpace(l.s))
		if err != nil {
			t.Fatalf("the child printed %q (%v); stderr: %s", l.s, l.err, c.stderr.String())
		}
		return n
	case <-time.After(hangGuard):
		t.Fatal("the child printed nothing")
		return 0
	}
}
