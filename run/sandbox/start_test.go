package sandbox

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// serveIn starts spec's command as a server, for the test's life at most.
func serveIn(t *testing.T, ctx context.Context, spec *Spec, opts *Options) *Process {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Helper == nil {
		opts.Helper = helperArgv(t)
	}
	if opts.Quarantine == "" {
		opts.Quarantine = t.TempDir()
	}
	p, err := Start(ctx, spec, opts)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Kill(); p.Wait() })
	return p
}

// TestStartServes: a started command answers over its pipes for as long
// as it runs (several exchanges, as a server's), ends when its input
// closes, and its result keeps standard error as Run does.
func TestStartServes(t *testing.T) {
	for _, mode := range []Containment{Full, Reduced} {
		t.Run(string(mode), func(t *testing.T) {
			f := newFixture(t)
			s := f.spec("/bin/sh", "-c", `echo started >&2; while read -r line; do echo "got $line"; done; echo bye >&2`)
			p := serveIn(t, context.Background(), s, &Options{Reduced: mode == Reduced})
			out := bufio.NewReader(p.Stdout)
			for i := range 3 {
				fmt.Fprintf(p.Stdin, "line %d\n", i)
				got, err := out.ReadString('\n')
				if want := fmt.Sprintf("got line %d\n", i); got != want || err != nil {
					t.Fatalf("answer %d: %q (%v), want %q", i, got, err, want)
				}
			}
			p.Stdin.Close()
			res, err := p.Wait()
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != 0 || res.Killed || res.Containment != mode {
				t.Errorf("exit %d, killed %v, containment %s", res.ExitCode, res.Killed, res.Containment)
			}
			if res.Stderr.Text != "started\nbye\n" || res.Stdout.Text != "" || res.Stdout.Bytes != 0 {
				t.Errorf("stderr %q, stdout %q", res.Stderr.Text, res.Stdout.Text)
			}
			select {
			case <-p.Done():
			default:
				t.Error("Done is not closed after Wait")
			}
		})
	}
}

// TestStartKill: Kill ends a command that ignores its input closing and
// SIGTERM, with every process it started (full containment: its PID
// namespace is gone); so does the end of Start's context.
func TestStartKill(t *testing.T) {
	for _, how := range []string{"kill", "context"} {
		t.Run(how, func(t *testing.T) {
			f := newFixture(t)
			s := f.spec("/bin/sh", "-c", `trap '' TERM; readlink /proc/self/ns/pid; (sleep 60 </dev/null >/dev/null 2>&1 &); exec sleep 60`)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p := serveIn(t, ctx, s, nil)
			ns, err := bufio.NewReader(p.Stdout).ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			p.Stdin.Close()
			if how == "kill" {
				p.Kill()
			} else {
				cancel()
			}
			done := make(chan struct{})
			var res *Result
			go func() { res, err = p.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(hangGuard):
				t.Fatal("the command outlived Kill")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !res.Killed {
				t.Errorf("killed %v, signal %q", res.Killed, res.Signal)
			}
			res.Stdout.Text = ns
			namespaceGone(t, f, res)
		})
	}
}

// TestStartRefusals: a command that cannot start fails Start itself, as
// Run fails, and Start takes no stdin bytes.
func TestStartRefusals(t *testing.T) {
	f := newFixture(t)
	if _, err := Start(context.Background(), f.spec("/nonexistent/server"), &Options{Helper: helperArgv(t), Quarantine: t.TempDir()}); err == nil {
		t.Error("a missing program started")
	}
	if _, err := Start(context.Background(), f.spec("/bin/cat"), &Options{Helper: helperArgv(t), Stdin: []byte("x")}); err == nil {
		t.Error("Start took Options.Stdin")
	}
	s := f.spec("/bin/cat")
	s.Writable = nil
	s.ReadOnly = nil
	if _, err := Start(context.Background(), s, &Options{Helper: helperArgv(t)}); err == nil {
		t.Error("a spec without roots started")
	}
}

// TestEscapesServed runs the attacks of the escape suite as a started
// command (a server's life): the command's output is read through
// Process.Stdout until it ends, and every invariant of the suite holds.
// Full containment, the default, takes every attack; reduced the reads,
// writes and connections out (every attack with CAPKIT_LONG_TESTS=1): the
// container is the one Run builds, so the served runs check the hand-over
// of the pipes, not the container again. The attacks on output bounds
// are Run's alone (a server's output is its protocol, read by its
// client).
func TestEscapesServed(t *testing.T) {
	skip := []string{"output floods", "endless output"}
	reduced := []string{"read $HOME", "read outside", "read root not granted", "write outside", "write read-only root",
		"write .git/config", "create missing protected file", "tcp4 loopback", "unix socket by path", "unix socket abstract"}
	long := os.Getenv("CAPKIT_LONG_TESTS") == "1"
	for _, mode := range []Containment{Full, Reduced} {
		t.Run(string(mode), func(t *testing.T) {
			for _, e := range escapes {
				if e.fullOnly && mode != Full || slices.Contains(skip, e.name) ||
					mode == Reduced && !long && !slices.Contains(reduced, e.name) {
					continue
				}
				t.Run(e.name, func(t *testing.T) { serveEscape(t, mode, e, nil) })
			}
			for i := range 4 {
				t.Run(fmt.Sprintf("host process %d", i), func(t *testing.T) {
					serveEscape(t, mode, escape{}, func(f *fixture) escape { return hostEscapes(f)[i] })
				})
			}
		})
	}
}

func serveEscape(t *testing.T, mode Containment, e escape, late func(*fixture) escape) {
	f := newFixture(t)
	if late != nil {
		e = late(f)
	}
	s := f.spec(e.argv(f)...)
	o := &Options{Helper: helperArgv(t), Reduced: mode == Reduced, Quarantine: t.TempDir()}
	if e.adjust != nil {
		e.adjust(f, s, o)
	}
	deadline := e.deadline
	if deadline == 0 {
		deadline = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	p := serveIn(t, ctx, s, o)
	p.Stdin.Close()
	out, _ := io.ReadAll(io.LimitReader(p.Stdout, 1<<20))
	res, err := p.Wait()
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	res.Stdout = Output{Text: string(out), Bytes: int64(len(out))}
	if res.Containment != mode {
		t.Errorf("containment %s, want %s", res.Containment, mode)
	}
	t.Logf("%s: exit %d %s\nstdout: %.400s\nstderr: %.400s", e.name, res.ExitCode, res.Signal, res.Stdout.Text, res.Stderr.Text)
	f.check(res)
	if e.want != nil {
		e.want(t, f, res)
	}
}

// TestStartLeavesNoPipes: the pipes handed over are the caller's, closed
// by Wait; nothing of the run stays open in this process.
func TestStartLeavesNoPipes(t *testing.T) {
	f := newFixture(t)
	before := openFDs(t)
	p := serveIn(t, context.Background(), f.spec("/bin/cat"), nil)
	p.Stdin.Close()
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	if after := openFDs(t); after > before {
		t.Errorf("%d descriptors open after the run, %d before", after, before)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name())); err == nil && strings.HasPrefix(l, "pipe:") {
			n++
		}
	}
	return n
}
