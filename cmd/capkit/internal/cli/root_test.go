package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
)

// run runs the command line with stdin through Main, as the capkit binary
// does, and returns the exit code, standard output and standard error.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// cmdCase is one command line of a table test: it must exit with code,
// and its standard output and error must contain out and err.
type cmdCase struct {
	name  string
	stdin string
	args  []string
	code  int
	out   string
	err   string
}

// runCases runs each case through run as a subtest.
func runCases(t *testing.T, cases []cmdCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.stdin, c.args...)
			if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errOut, c.err) {
				t.Fatalf("exit %d\nstdout %q\nstderr %q", code, out, errOut)
			}
			if r := testkit.Repeated(errOut); r != "" {
				t.Fatalf("stderr says %q twice: %q", r, errOut)
			}
		})
	}
}

func TestVersionAndUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		out  string
	}{
		{"version", []string{"version"}, 0, "capkit "},
		{"version json", []string{"version", "--json"}, 0, `"version"`},
		{"unknown command", []string{"frobnicate"}, 2, ""},
		{"unknown flag", []string{"version", "--nope"}, 2, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, _ := run(t, "", c.args...)
			if code != c.code || !strings.Contains(out, c.out) {
				t.Fatalf("exit %d out %q", code, out)
			}
		})
	}
}

// TestJSONFailureShape: with --json a failure is one object on stdout,
// {"error": fault.Report}, the shape an MCP failure's _meta copy has.
func TestJSONFailureShape(t *testing.T) {
	code, out, _ := run(t, "{", "--json", "json", "validate", "-")
	if code != 2 {
		t.Fatalf("exit %d, out %q", code, out)
	}
	var got struct {
		Error map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v: %q", err, out)
	}
	if got.Error["code"] != "invalid_input" || got.Error["message"] == "" {
		t.Fatalf("error = %v", got.Error)
	}
	if _, ok := got.Error["retry_after_seconds"]; ok {
		t.Errorf("retry_after_seconds present without a retry hint: %v", got.Error)
	}
}

// Each group is listed under its command's name (newRoot builds only the
// group args name), and no command is reached by another name.
func TestGroupNames(t *testing.T) {
	env := &Env{Stdout: io.Discard, Stderr: io.Discard}
	seen := map[string]bool{}
	for _, g := range groups {
		cmd := g.new(env)
		if cmd.Name() != g.name || len(cmd.Aliases) > 0 || seen[g.name] {
			t.Errorf("group %q builds %q (aliases %v)", g.name, cmd.Name(), cmd.Aliases)
		}
		seen[g.name] = true
	}
	root := newRoot(env, []string{"call", "read_file"})
	if cmds := root.Commands(); len(cmds) != 1 || cmds[0].Name() != "call" {
		t.Errorf("capkit call builds %v", cmds)
	}
	if all := newRoot(env, []string{"--json", "call"}); len(all.Commands()) != len(groups) {
		t.Errorf("a flag first builds %d of %d groups", len(all.Commands()), len(groups))
	}
}

// TestFailureTextAsMCP: without --json, a failure on standard error is
// "capkit: " and the text an MCP client and a host's loop read
// (fault.Report.Text, with the cause: the CLI's reader is trusted): the
// code and message, the retry hint when a retry may be admitted later,
// then the detail (TestCallFailureShowsOutput has one).
func TestFailureTextAsMCP(t *testing.T) {
	dir := t.TempDir()
	policy, root := filepath.Join(dir, "budget.json"), filepath.Join(dir, "root")
	mustNil(t, os.WriteFile(policy, []byte(`{"format": 1, "group": "g", "window_seconds": 3600, "window_requests": 1, "window_bytes": 1000}`), 0o600))
	reserve := []string{"budget", "reserve", root, "--budget", policy, "--task", "op", "--bytes", "5"}
	if code, _, stderr := run(t, "", reserve...); code != 0 {
		t.Fatalf("the first reservation: exit %d, %s", code, stderr)
	}
	code, out, _ := run(t, "", append(reserve, "--json")...)
	var got struct{ Error fault.Report }
	if err := json.Unmarshal([]byte(out), &got); err != nil || code != 8 || got.Error.RetryAfterSeconds == 0 {
		t.Fatalf("the second reservation with --json: exit %d, %q (%v)", code, out, err)
	}
	code, _, stderr := run(t, "", reserve...)
	// The hint is the rest of the window, rounded up to a second: a
	// second may have ended between the two runs.
	for _, s := range []int64{got.Error.RetryAfterSeconds, got.Error.RetryAfterSeconds - 1} {
		r := got.Error
		r.RetryAfterSeconds = s
		if stderr == "capkit: "+r.Text()+"\n" {
			return
		}
	}
	t.Errorf("exit %d, stderr %q\nwant  %q", code, stderr, "capkit: "+got.Error.Text()+"\n")
}
