package run

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox"
)

// TestOutputBoundDefault: the contained tools answer within the
// token-sized default bound unless [run] max_output_bytes keeps more of
// each stream than that bound holds.
func TestOutputBoundDefault(t *testing.T) {
	cmd := map[string]Command{"": {Argv: []string{"true"}}}
	for _, c := range []struct {
		cfg  Config
		want int64
	}{
		{Config{Test: cmd, Build: cmd}, limits.DefaultMaxOutputBytes},
		{Config{Test: cmd, Build: cmd, MaxOutputBytes: limits.MiB}, 2*limits.MiB + limits.RunResultFrameBytes},
	} {
		rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Config: c.cfg, Helper: helper(t)})
		for _, name := range []string{"run_shell", "run_test", "run_build"} {
			if p, _ := rt.Policy(name); p.MaxOutputBytes != c.want {
				t.Errorf("[run] max_output_bytes %d: %s's output bound is %d, want %d", c.cfg.MaxOutputBytes, name, p.MaxOutputBytes, c.want)
			}
		}
	}
}

// TestFitToOutputBound: streams that do not fit the tool's output bound
// beside the rest of the result are cut again around a marker that says
// how many bytes of the kept text it leaves out; the result fits, and
// says so. A bound the result without its streams does not fit fails
// with limit, naming the setting and saying the command ran.
func TestFitToOutputBound(t *testing.T) {
	call := func(max int64) *kernel.Call {
		return &kernel.Call{Tool: &catalog.Entry{Name: "run_shell"}, MaxOutputBytes: max}
	}
	base := RunResult{Command: []string{"/bin/sh", "-c", "x"}, Dir: "/w", ExitCode: 3, Containment: "full", StdoutBytes: 80_000, StderrBytes: 200}
	for _, c := range []struct {
		name           string
		stdout, stderr string
		max            int64
	}{
		{"both fit", "out\n", "err\n", 4096},
		{"stdout too long", strings.Repeat("a line of output\n", 5000), "err\n", 4096},
		{"both too long, one multi-byte", strings.Repeat("é", 20_000), strings.Repeat("x", 30_000), 8192},
		{"the default bound, three times the stream bound", strings.Repeat("\uFFFD", 30_000), strings.Repeat("\uFFFD", 30_000), limits.DefaultMaxOutputBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			r.stdout, r.stderr = c.stdout, c.stderr
			got, err := fitOutput(call(c.max), r)
			if err != nil {
				t.Fatal(err)
			}
			res, err := kernel.Encode(got)
			if err != nil {
				t.Fatal(err)
			}
			whole := len(c.stdout)+len(c.stderr) == len(got.stdout)+len(got.stderr)
			switch {
			case res.Size() > c.max:
				t.Fatalf("%d bytes, over %d", res.Size(), c.max)
			case whole != (got.CutToFit == 0) || !utf8.ValidString(got.stdout) || !utf8.ValidString(got.stderr) || got.ExitCode != 3:
				t.Fatalf("cut %d: %+v", got.CutToFit, got)
			}
			cut := int64(0)
			for _, s := range []struct{ kept, was string }{{got.stdout, c.stdout}, {got.stderr, c.stderr}} {
				if s.kept == s.was {
					continue
				}
				head, tail, ok := strings.Cut(s.kept, "\n[... ")
				marker, tail, _ := strings.Cut(tail, " ...]\n")
				var n int64
				fmt.Sscanf(marker, "%d bytes", &n)
				if !ok || !strings.HasPrefix(s.was, head) || !strings.HasSuffix(s.was, tail) || int64(len(s.was)-len(head)-len(tail)) != n ||
					!strings.Contains(marker, "cut to fit this tool's output bound") {
					t.Fatalf("marker %q, %d bytes cut", marker, n)
				}
				cut += n
			}
			if cut != got.CutToFit || (cut > 0) != strings.Contains(res.Text, fmt.Sprintf("%d bytes of the output were cut to fit", cut)) {
				t.Fatalf("cut %d, reported %d:\n%s", cut, got.CutToFit, res.Text)
			}
		})
	}
	r := base
	r.stdout = "out\n"
	_, err := fitOutput(call(200), r)
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "[tool.run_shell] max_output_bytes") || !strings.Contains(err.Error(), "the command ran (exit code 3)") {
		t.Fatalf("a bound the result's frame does not fit: %v", err)
	}
}

// TestBinaryOutputFitsTheBound: a command writing 100,000 bytes to both
// streams, every other one not UTF-8 (each kept stream twice its bound
// once they are shown as U+FFFD), answers within the default bound, and
// within a bound capkit.toml lowers, with the cut reported.
func TestBinaryOutputFitsTheBound(t *testing.T) {
	root := t.TempDir()
	for _, max := range []int64{limits.DefaultMaxOutputBytes, 4096} {
		rt := testkit.RuntimeBound(t, RegisterTools, &ToolOptions{Helper: helper(t)}, max)
		s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
		res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": `b=$(printf '\377'); yes "$b" | head -c 100000; yes "$b" | head -c 100000 >&2; exit 5`})
		if err != nil {
			t.Fatalf("bound %d: %v", max, err)
		}
		if r := decode(t, res); res.Size() > max || r.ExitCode != 5 || r.CutToFit == 0 || !strings.Contains(res.Text, "cut to fit this tool's output bound") {
			t.Errorf("bound %d: %d bytes, %+v", max, res.Size(), r)
		}
	}
}

// TestFailureDetailFits: a failed command's output becomes the failure's
// detail, both streams under their headings, cut around the marker to fit
// the call's output bound beside the message; a failure without output,
// or of a command that never ran, has none.
func TestFailureDetailFits(t *testing.T) {
	call := &kernel.Call{Tool: &catalog.Entry{Name: "run_shell"}, MaxOutputBytes: 4096}
	outcome := func(stdout, stderr string) *Outcome {
		return &Outcome{Result: &sandbox.Result{Stdout: sandbox.Output{Text: stdout}, Stderr: sandbox.Output{Text: stderr}}}
	}
	for _, c := range []struct {
		name, stdout, stderr string
		cut                  bool
	}{
		{"both fit", "before the timeout\n", "a warning", false},
		{"stdout long", strings.Repeat("a line of output\n", 5000), "err\n", true},
		{"both long", strings.Repeat("é", 20_000), strings.Repeat("x", 30_000), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := withOutput(call, outcome(c.stdout, c.stderr), fault.New(fault.Limit, "the command ran past its time limit"))
			fe := fault.As(err)
			if fe.Code != fault.Limit || fe.Message != "the command ran past its time limit" {
				t.Fatalf("the failure changed: %v", err)
			}
			d := fe.Detail
			if len(fe.Report(false).Text()) > int(call.MaxOutputBytes) || !utf8.ValidString(d) {
				t.Fatalf("the detail does not fit %d bytes beside the message: %d bytes", call.MaxOutputBytes, len(d))
			}
			if !strings.HasPrefix(d, "--- stdout ---\n") || !strings.Contains(d, "\n--- stderr ---\n") || strings.Contains(d, "bytes cut to fit") != c.cut {
				t.Fatalf("detail:\n%s", d)
			}
			if !c.cut && d != "--- stdout ---\n"+c.stdout+"--- stderr ---\n"+c.stderr+"\n" {
				t.Fatalf("detail:\n%q", d)
			}
			if strings.Contains(err.Error(), c.stdout[:10]) {
				t.Fatalf("the output is in Error(), which logs take: %q", err.Error())
			}
		})
	}
	plain := fault.New(fault.Limit, "killed")
	if err := withOutput(call, outcome("", ""), plain); fault.As(err).Detail != "" {
		t.Errorf("a command without output: %+v", err)
	}
	if err := withOutput(call, nil, errNoHelper); err != errNoHelper || errNoHelper.Detail != "" {
		t.Errorf("a command that never ran: %+v", err)
	}
}
