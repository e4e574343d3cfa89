package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// escape is one attack on the container.
type escape struct {
	name string
	// argv is the command, given the fixture.
	argv func(f *fixture) []string
	// adjust changes the spec or options (tighter limits).
	adjust func(f *fixture, s *Spec, o *Options)
	// deadline is the call's time bound (default 20s).
	deadline time.Duration
	// want asserts what the attack must show besides check's invariants.
	want func(t *testing.T, f *fixture, res *Result)
	// full only: the attack needs what reduced containment does not give
	// (a PID namespace, a process limit that binds root).
	fullOnly bool
}

func sh(script string) func(*fixture) []string {
	return func(*fixture) []string { return []string{"/bin/sh", "-c", script} }
}

func shf(format func(f *fixture) string) func(*fixture) []string {
	return func(f *fixture) []string { return []string{"/bin/sh", "-c", format(f)} }
}

func probeOf(args func(f *fixture) []string) func(*fixture) []string {
	return func(f *fixture) []string { return f.probe(args(f)...) }
}

func stdoutMatches(re *regexp.Regexp) func(t *testing.T, f *fixture, res *Result) {
	return func(t *testing.T, f *fixture, res *Result) {
		t.Helper()
		if !re.MatchString(res.Stdout.Text) {
			t.Errorf("stdout does not match %v:\n%s\nstderr:\n%s", re, res.Stdout.Text, res.Stderr.Text)
		}
	}
}

var escapes = []escape{
	{name: "read $HOME", argv: probeOf(func(f *fixture) []string { return []string{"read", f.home} }), want: stdoutMatches(denied)},
	{name: "read /root", argv: probeOf(func(f *fixture) []string {
		if f.slashRoot == "" {
			f.t.Skip("/root cannot be written here, so no marker can be planted there")
		}
		return []string{"read", f.slashRoot}
	}), want: stdoutMatches(denied)},
	{name: "read host /tmp", argv: probeOf(func(f *fixture) []string { return []string{"read", f.hostTmp} }), want: stdoutMatches(denied)},
	{name: "read root not granted", argv: probeOf(func(f *fixture) []string { return []string{"read", filepath.Join(f.other, "secret.txt")} }), want: stdoutMatches(denied)},
	{name: "read outside", argv: probeOf(func(f *fixture) []string { return []string{"read", filepath.Join(f.outside, "secret.txt")} }), want: stdoutMatches(denied)},
	{name: "read /etc/shadow", argv: probeOf(func(f *fixture) []string { return []string{"read", "/etc/shadow"} }), want: stdoutMatches(denied)},
	{name: "list /etc/ssl/private", argv: sh(`ls -la /etc/ssl/private && echo listed`),
		want: func(t *testing.T, f *fixture, res *Result) {
			if strings.Contains(res.Stdout.Text, "listed") {
				t.Errorf("the host's private keys directory is visible:\n%s", res.Stdout.Text)
			}
		}},
	{name: "set-user-ID file", argv: sh(`cp /bin/true sub/suid; chmod 4755 sub/suid; chmod g+s sub/suid; ls -l sub/suid`),
		want: func(t *testing.T, f *fixture, res *Result) {
			st, err := os.Stat(filepath.Join(f.root, "sub", "suid"))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
				t.Errorf("the container made a set-ID file on the host: %v", st.Mode())
			}
		}},
	{name: "set-user-ID file created", argv: probeOf(func(f *fixture) []string { return []string{"create-suid", filepath.Join(f.root, "sub", "suid")} }),
		want: func(t *testing.T, f *fixture, res *Result) {
			if st, err := os.Stat(filepath.Join(f.root, "sub", "suid")); err == nil && st.Mode()&os.ModeSetuid != 0 {
				t.Errorf("the container made a set-ID file on the host: %v", st.Mode())
			}
			stdoutMatches(deniedWith(int(syscall.EPERM)))(t, f, res)
		}},
	{name: "write outside", argv: probeOf(func(f *fixture) []string { return []string{"write", filepath.Join(f.outside, "new.txt")} }), want: stdoutMatches(denied)},
	{name: "overwrite outside", argv: probeOf(func(f *fixture) []string { return []string{"write", filepath.Join(f.outside, "victim.txt")} }), want: stdoutMatches(denied)},
	{name: "write read-only root", argv: probeOf(func(f *fixture) []string { return []string{"write", filepath.Join(f.ro, "data.txt")} }), want: stdoutMatches(denied)},
	{name: "create in read-only root", argv: probeOf(func(f *fixture) []string { return []string{"write", filepath.Join(f.ro, "new.txt")} }), want: stdoutMatches(denied)},
	{name: "write .git/hooks", argv: sh(`echo evil > .git/hooks/pre-commit; echo evil > .git/hooks/post-checkout; rm -f .git/hooks/pre-commit; echo done`)},
	// Landlock does not govern a file's mode or times: only the read-only
	// mount of full containment keeps them.
	{name: "chmod .git/hooks", argv: sh(`chmod 777 .git/hooks/pre-commit .git/hooks; touch -d 2000-01-01 .git/config; echo done`), fullOnly: true},
	{name: "write .git/config", argv: sh(`printf '[core]\n\thooksPath = /tmp\n' >> .git/config; git config core.hooksPath /tmp 2>&1; echo done`)},
	{name: "replace .git", argv: sh(`mv .git .git-old; rm -rf .git; mkdir -p .git/hooks && echo evil > .git/hooks/pre-commit; echo done`)},
	{name: "write capkit.toml", argv: sh(`echo '[[root]] path = "/"' > capkit.toml; rm -f capkit.toml; mv capkit.toml x.toml; echo done`)},
	{name: "create missing protected file", argv: sh(`echo evil > .envrc; ln -s /etc/passwd .envrc; mkdir .envrc; mv sub/file.txt .envrc; echo done`),
		want: func(t *testing.T, f *fixture, res *Result) {
			// Reduced containment closes the top, which holds .git.
			if res.Containment == Reduced && slices.Equal(res.Closed, []string{f.root}) && len(res.Quarantined) == 0 {
				return
			}
			if len(res.Quarantined) != 1 || res.Quarantined[0].Path != f.envrc || res.Quarantined[0].To == "" {
				t.Errorf("moved %+v, want %s in the quarantine", res.Quarantined, f.envrc)
			}
		}},
	{name: "protected name made by a late process", argv: sh(`(sleep 0.3; echo late > .envrc) </dev/null >/dev/null 2>&1 & echo started`),
		want: func(t *testing.T, f *fixture, res *Result) {
			time.Sleep(500 * time.Millisecond)
			if _, err := os.Lstat(f.envrc); err == nil {
				t.Errorf("a process of the command made %s after the call", f.envrc)
			}
		}},
	{name: "write through symlink", argv: sh(`cat link; echo pwned > link; echo pwned >> link; echo done`)},
	{name: "hard link out", argv: shf(func(f *fixture) string {
		return fmt.Sprintf(`ln %s hl; echo pwned >> hl; ln /etc/passwd hl2; echo pwned >> hl2; ln %s hl3; echo done`,
			filepath.Join(f.outside, "victim.txt"), filepath.Join(f.ro, "data.txt"))
	})},
	{name: "hard link to protected", argv: sh(`ln .git/config sub/cfg; echo pwned >> sub/cfg; ln capkit.toml sub/c.toml; echo pwned >> sub/c.toml; mv .git/hooks sub/hooks; echo done`)},
	{name: "tcp4 loopback", argv: probeOf(func(f *fixture) []string { return []string{"dial", "tcp4", f.addrs["tcp4"]} }), want: stdoutMatches(denied)},
	{name: "tcp6 loopback", argv: probeOf(func(f *fixture) []string { return []string{"dial", "tcp6", f.addrs["tcp6"]} }), want: stdoutMatches(denied)},
	{name: "udp4 loopback", argv: probeOf(func(f *fixture) []string { return []string{"dial", "udp4", f.addrs["udp4"]} }), want: stdoutMatches(denied)},
	{name: "udp6 loopback", argv: probeOf(func(f *fixture) []string { return []string{"dial", "udp6", f.addrs["udp6"]} }), want: stdoutMatches(denied)},
	{name: "unix socket by path", argv: probeOf(func(f *fixture) []string { return []string{"dial", "unix", f.addrs["unix"]} }), want: stdoutMatches(denied)},
	{name: "unix socket abstract", argv: probeOf(func(f *fixture) []string { return []string{"abstract", f.abstract} }), want: stdoutMatches(denied)},
	{name: "netlink socket", argv: probeOf(func(*fixture) []string { return []string{"socket", fmt.Sprint(syscall.AF_NETLINK)} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "packet socket", argv: probeOf(func(*fixture) []string { return []string{"socket", fmt.Sprint(syscall.AF_PACKET)} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "vsock socket", argv: probeOf(func(*fixture) []string { return []string{"socket", "40"} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "io_uring_setup", argv: probeOf(func(*fixture) []string { return []string{"io_uring"} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "TIOCSTI", argv: probeOf(func(*fixture) []string { return []string{"tiocsti"} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "TIOCSTI high bits", argv: probeOf(func(*fixture) []string { return []string{"tiocsti", "high"} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "unshare", argv: probeOf(func(*fixture) []string { return []string{"unshare"} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "mount", argv: probeOf(func(*fixture) []string { return []string{"mount"} }), want: stdoutMatches(deniedWith(int(syscall.EPERM)))},
	{name: "write /proc/sysrq-trigger", argv: probeOf(func(*fixture) []string { return []string{"openw", "/proc/sysrq-trigger"} }), want: stdoutMatches(denied)},
	{name: "write /proc/sys", argv: probeOf(func(*fixture) []string { return []string{"openw", "/proc/sys/kernel/core_pattern"} }), want: stdoutMatches(denied)},
	// dd, not the probe: a race-instrumented probe cannot start under the
	// bound at all.
	{name: "memory bomb", argv: sh(`dd if=/dev/zero of=/dev/null bs=2G count=1; echo status $?`),
		adjust: func(f *fixture, s *Spec, o *Options) { s.Limits.MemoryBytes = 1 << 30 },
		want: func(t *testing.T, f *fixture, res *Result) {
			if !strings.Contains(res.Stdout.Text, "status 1") || !strings.Contains(res.Stderr.Text, "memory exhausted") {
				t.Errorf("the 2 GiB buffer was not refused:\n%s%s", res.Stdout.Text, res.Stderr.Text)
			}
		}},
	{name: "file past its bound", argv: sh(`head -c 4194304 /dev/zero > sub/big; echo status $?`),
		adjust: func(f *fixture, s *Spec, o *Options) { s.Limits.FileBytes = 1 << 20 },
		want: func(t *testing.T, f *fixture, res *Result) {
			st, err := os.Stat(filepath.Join(f.root, "sub", "big"))
			if err != nil {
				t.Fatal(err)
			}
			if st.Size() > 1<<20 {
				t.Errorf("big: %d bytes, past the bound of %d", st.Size(), 1<<20)
			}
		}},
	{name: "fill /tmp", argv: sh(`head -c 8388608 /dev/zero > "$TMPDIR/big"; echo status $?`),
		adjust: func(f *fixture, s *Spec, o *Options) { s.Limits.TmpBytes = 2 << 20 }, fullOnly: true,
		want: stdoutMatches(regexp.MustCompile(`status [1-9]`))},
	{name: "output floods", argv: sh(`head -c 3000000 /dev/zero | tr '\0' a; head -c 2000000 /dev/zero | tr '\0' b >&2`),
		want: func(t *testing.T, f *fixture, res *Result) {
			wantCut(t, res.Stdout, 3_000_000)
			wantCut(t, res.Stderr, 2_000_000)
		}},
	{name: "endless output", argv: sh(`yes flood & yes flood >&2`), deadline: 2 * time.Second,
		want: func(t *testing.T, f *fixture, res *Result) {
			if !res.Killed || res.Stdout.Omitted == 0 || len(res.Stdout.Text) > 31_000 || len(res.Stderr.Text) > 31_000 {
				t.Errorf("killed %v, stdout %d bytes kept of %d", res.Killed, len(res.Stdout.Text), res.Stdout.Bytes)
			}
		}},
	{name: "fork bomb", argv: sh(`readlink /proc/self/ns/pid; f() { f | f & }; f; exec sleep 10`), deadline: 3 * time.Second,
		adjust: func(f *fixture, s *Spec, o *Options) { s.Limits.Processes = 400 }, fullOnly: true,
		want: func(t *testing.T, f *fixture, res *Result) {
			if !res.Killed {
				t.Errorf("the bomb was not running at the deadline")
			}
			namespaceGone(t, f, res)
		}},
	{name: "setsid daemon", argv: sh(`readlink /proc/self/ns/pid; setsid sh -c 'sleep 30; echo leaked > leaked.txt' </dev/null >/dev/null 2>&1 & echo started`),
		fullOnly: true, want: namespaceGone},
	{name: "double fork", argv: sh(`readlink /proc/self/ns/pid; (sh -c 'sleep 30; echo leaked > leaked.txt' </dev/null >/dev/null 2>&1 &) ; echo started`),
		fullOnly: true, want: namespaceGone},
	{name: "read inside (control)", argv: probeOf(func(f *fixture) []string { return []string{"read", filepath.Join(f.root, "sub", "file.txt")} }),
		want: stdoutMatches(regexp.MustCompile(`inside\nok`))},
	{name: "write inside (control)", argv: sh(`echo new > sub/new.txt && cat sub/new.txt && echo edit >> main.go && echo ok`),
		want: stdoutMatches(regexp.MustCompile(`new\nok`))},
	{name: "ignores SIGTERM", argv: sh(`trap '' TERM; sleep 100`), deadline: time.Second,
		want: func(t *testing.T, f *fixture, res *Result) {
			if !res.Killed || res.Signal != "SIGKILL" {
				t.Errorf("killed %v, signal %q", res.Killed, res.Signal)
			}
		}},
}

// namespaceGone checks that no process is left in the PID namespace
// whose link the command printed first. The kernel gives a freed
// namespace's number to the next one made, by any process of the
// machine (other tests' containers), so a process that started after
// the call ended is not one of the call's.
func namespaceGone(t *testing.T, f *fixture, res *Result) {
	t.Helper()
	ended := bootTicks(t)
	ns, _, _ := strings.Cut(res.Stdout.Text, "\n")
	if !strings.HasPrefix(ns, "pid:[") {
		t.Fatalf("the command did not print its PID namespace: %q", res.Stdout.Text)
	}
	pids, _ := filepath.Glob("/proc/[0-9]*/ns/pid")
	for _, p := range pids {
		dir := filepath.Dir(filepath.Dir(p))
		if l, err := os.Readlink(p); err != nil || l != ns {
			continue
		}
		if start, gone := startTicks(dir); !gone && start <= ended {
			t.Errorf("%s is still in the call's namespace %s", dir, ns)
		}
	}
}

// bootTicks is the time since boot in clock ticks (USER_HZ, 100 a
// second), as /proc/PID/stat gives a process's start.
func bootTicks(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	sec, frac, _ := strings.Cut(f[0], ".")
	s, err1 := strconv.ParseInt(sec, 10, 64)
	c, err2 := strconv.ParseInt((frac + "00")[:2], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/uptime: %q", b)
	}
	return s*100 + c + 1 // rounded up: a process started in this tick started before now
}

// startTicks is when the process of /proc directory dir started, in
// clock ticks since boot; gone reports a process that has ended since it
// was listed (no leftover). A stat that cannot be read otherwise counts
// as a start at boot, so that it never hides a leftover.
func startTicks(dir string) (ticks int64, gone bool) {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, true
	}
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	// starttime is field 22 of stat(5): the 20th after the command name.
	if len(f) < 20 {
		return 0, false
	}
	n, _ := strconv.ParseInt(f[19], 10, 64)
	return n, false
}

// wantCut checks a flooded stream: head and tail kept around a marker
// that states exactly the bytes left out.
func wantCut(t *testing.T, o Output, wrote int64) {
	t.Helper()
	marker := fmt.Sprintf("\n[... %d bytes omitted ...]\n", o.Omitted)
	if o.Bytes != wrote || !strings.Contains(o.Text, marker) || int64(len(o.Text)-len(marker))+o.Omitted != wrote {
		t.Errorf("stream of %d bytes: kept %d, omitted %d, counted %d", wrote, len(o.Text), o.Omitted, o.Bytes)
	}
}

// hostEscapes need the fixture's host child.
func hostEscapes(f *fixture) []escape {
	child := f.hostChild()
	pid := fmt.Sprint(child.Process.Pid)
	stillAlive := func(t *testing.T, f *fixture, res *Result) {
		if !alive(child) {
			t.Errorf("the host process was killed")
		}
		stdoutMatches(denied)(t, f, res)
	}
	// A descriptor the host process holds without close-on-exec, as one
	// inherited from whatever started it.
	var p [2]int
	must(f.t, unix.Pipe2(p[:], 0))
	f.t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	unix.SetNonblock(p[0], true)
	return []escape{
		{name: "inherited descriptor", argv: probeOf(func(*fixture) []string { return []string{"write-fd", fmt.Sprint(p[1])} }),
			want: func(t *testing.T, f *fixture, res *Result) {
				buf := make([]byte, 64)
				if n, _ := unix.Read(p[0], buf); n > 0 {
					t.Errorf("the container wrote %q into the host's pipe", buf[:n])
				}
				stdoutMatches(deniedWith(int(syscall.EBADF)))(t, f, res)
			}},
		{name: "signal host process", argv: probeOf(func(*fixture) []string { return []string{"kill", pid} }), want: stillAlive},
		{name: "ptrace host process", argv: probeOf(func(*fixture) []string { return []string{"ptrace", pid} }), want: stillAlive},
		{name: "read host environ", argv: probeOf(func(*fixture) []string { return []string{"read", "/proc/" + pid + "/environ"} }), want: stillAlive},
	}
}

func TestEscapes(t *testing.T) {
	for _, mode := range []Containment{Full, Reduced} {
		t.Run(string(mode), func(t *testing.T) {
			for _, e := range escapes {
				if e.fullOnly && mode != Full {
					continue
				}
				t.Run(e.name, func(t *testing.T) { runEscape(t, mode, false, e, nil) })
			}
			for i := range 4 {
				t.Run(fmt.Sprintf("host process %d", i), func(t *testing.T) {
					runEscape(t, mode, false, escape{}, func(f *fixture) escape { return hostEscapes(f)[i] })
				})
			}
		})
	}
}

// TestEscapesWarm runs every attack in a helper started ahead of its call
// (Options.Warm), as a server runs commands.
func TestEscapesWarm(t *testing.T) {
	for _, e := range escapes {
		t.Run(e.name, func(t *testing.T) { runEscape(t, Full, true, e, nil) })
	}
	for i := range 4 {
		t.Run(fmt.Sprintf("host process %d", i), func(t *testing.T) {
			runEscape(t, Full, true, escape{}, func(f *fixture) escape { return hostEscapes(f)[i] })
		})
	}
}

func runEscape(t *testing.T, mode Containment, warm bool, e escape, late func(*fixture) escape) {
	f := newFixture(t)
	if late != nil {
		e = late(f)
	}
	s := f.spec(e.argv(f)...)
	o := &Options{Helper: helperArgv(t), Reduced: mode == Reduced, Quarantine: t.TempDir()}
	if e.adjust != nil {
		e.adjust(f, s, o)
	}
	if warm {
		o.Warm = warmFor(t, s, o)
	}
	deadline := e.deadline
	if deadline == 0 {
		deadline = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	start := time.Now()
	res, err := Run(ctx, s, o)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if took := time.Since(start); took > deadline+hangGuard/2 {
		t.Errorf("the call took %v, past its deadline of %v", took, deadline)
	}
	if res.Containment != mode {
		t.Errorf("containment %s, want %s", res.Containment, mode)
	}
	if res.warm != warm {
		t.Errorf("ran in a warm helper: %v, want %v", res.warm, warm)
	}
	t.Logf("%s: exit %d %s\nstdout: %.400s\nstderr: %.400s", e.name, res.ExitCode, res.Signal, res.Stdout.Text, res.Stderr.Text)
	f.check(res)
	if e.want != nil {
		e.want(t, f, res)
	}
}
