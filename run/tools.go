package run

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run/sandbox"
)

// ToolOptions configure the contained-command tools. Helper is required
// for any command to run.
type ToolOptions struct {
	// Config is the host's [run], [test] and [build] settings.
	Config Config
	// Helper starts the sandbox helper: a program linking run/sandbox,
	// given sandbox.HelperArg (capkit: its own executable).
	Helper []string
	// Audit receives one event per command saying how it was contained;
	// nil disables it.
	Audit *slog.Logger
	// Warm, when set, keeps the next command's container built ahead;
	// its owner closes it.
	Warm *sandbox.Warm
}

// ShellArgs are run_shell's arguments.
type ShellArgs struct {
	Command        string `json:"command" jsonschema:"the command line, run by /bin/sh -c"`
	Cwd            string `json:"cwd,omitempty" jsonschema:"working directory: relative to the first writable root, or absolute inside a granted root; default: the first writable root"`
	TimeoutSeconds int    `json:"timeout_seconds,omitempty" jsonschema:"wall-clock bound in seconds; default and maximum: the host's"`
	Stdin          string `json:"stdin,omitempty" jsonschema:"standard input; default: empty (/dev/null)"`
}

// DeclaredArgs are run_test's and run_build's arguments.
type DeclaredArgs struct {
	Name string   `json:"name,omitempty" jsonschema:"the declared variant to run; default: the default one"`
	Args []string `json:"args,omitempty" jsonschema:"extra arguments, each matching the pattern the host allows"`
	Cwd  string   `json:"cwd,omitempty" jsonschema:"root (or directory inside one) to run in; default: the first writable root"`
}

// RunResult is what a contained command did.
type RunResult struct {
	Command     []string `json:"command"`
	Dir         string   `json:"dir"`
	ExitCode    int      `json:"exit_code"`
	Signal      string   `json:"signal,omitempty"`
	DurationMS  int64    `json:"duration_ms"`
	StdoutBytes int64    `json:"stdout_bytes"`
	StderrBytes int64    `json:"stderr_bytes"`
	Omitted     int64    `json:"omitted_bytes,omitzero"`
	// CutToFit counts the bytes of the kept streams' text left out of this
	// result to fit the tool's output bound (a marker in each cut stream
	// says how many).
	CutToFit    int64    `json:"cut_to_fit_bytes,omitzero"`
	Containment string   `json:"containment"`
	Notes       []string `json:"notes,omitempty"`
	// Closed are the directories in which no entry could be created,
	// removed or renamed (reduced containment: each holds or leads to a
	// protected path that exists).
	Closed []string `json:"closed,omitempty"`
	// Leftover is a private tmp that could not be removed (reduced
	// containment), with why; the next command removes it.
	Leftover string `json:"leftover,omitempty"`
	// Cgroup says which cgroup v2 limits bound the command (the group's
	// host path, which names the server's process, only in the audit).
	Cgroup sandbox.CgroupReport `json:"cgroup"`
	// Network lists the requests the network proxy refused, and why.
	Network []string `json:"network,omitempty"`

	stdout, stderr string
}

// Stdout and Stderr are the kept streams.
func (r RunResult) Stdout() string { return r.stdout }
func (r RunResult) Stderr() string { return r.stderr }

// ToolText is what the model reads: the status line, then both streams.
func (r RunResult) ToolText() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s after %.3fs (%s containment)\n", r.status(), float64(r.DurationMS)/1000, r.Containment)
	writeStreams(&b, r.stdout, r.stderr)
	if r.CutToFit > 0 {
		fmt.Fprintf(&b, "note: %d bytes of the output were cut to fit this tool's output bound; each cut stream says where\n", r.CutToFit)
	}
	if r.ExitCode != 0 || r.Signal != "" {
		b.WriteString(r.closedText())
	}
	for _, n := range r.Network {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	return b.String()
}

// writeStreams writes each stream that is not empty under its heading.
func writeStreams(b *strings.Builder, stdout, stderr string) {
	for _, s := range []struct{ name, text string }{{"stdout", stdout}, {"stderr", stderr}} {
		if s.text == "" {
			continue
		}
		fmt.Fprintf(b, "--- %s ---\n%s", s.name, s.text)
		if !strings.HasSuffix(s.text, "\n") {
			b.WriteByte('\n')
		}
	}
}

// withOutput is the failure err of a command that ran (o), with what it
// printed as the failure's detail, so that the caller can act on a
// timeout, a limit or a quarantine as on a result: both streams under
// their headings, cut again around the marker (cutMiddle) where they
// would not fit the call's output bound beside the failure's message.
// Without an outcome (the command never ran) err is returned as it is.
func withOutput(call *kernel.Call, o *Outcome, err error) error {
	fe := fault.As(err)
	if o == nil || fe.Detail != "" {
		return err
	}
	res := o.Result
	if res.Stdout.Text == "" && res.Stderr.Text == "" {
		return err
	}
	room := int(call.MaxOutputBytes) - len(fe.Error()) - 2*len("--- stdout ---\n\n") - 64
	outRoom, errRoom := share(len(res.Stdout.Text), len(res.Stderr.Text), max(room, 0))
	stdout, _ := cutMiddle(res.Stdout.Text, outRoom)
	stderr, _ := cutMiddle(res.Stderr.Text, errRoom)
	var b strings.Builder
	writeStreams(&b, stdout, stderr)
	// fe is the command's own failure (failure or quarantined made it for
	// this call), so it is set in place.
	return fe.WithDetail(b.String())
}

// status is how the command ended.
func (r RunResult) status() string {
	if r.Signal != "" {
		return "killed by " + r.Signal
	}
	return fmt.Sprintf("exit code %d", r.ExitCode)
}

// cutMarker stands where a stream was cut to fit the output bound.
const cutMarker = "\n[... %d bytes cut to fit this tool's output bound ...]\n"

// fitOutput returns r, its streams cut again around a marker where the
// result would not fit the call's output bound beside the rest of it
// (the streams share what is left; a short one is kept whole). A result
// that does not fit without its streams fails with limit, saying that the
// command ran and how it ended.
func fitOutput(call *kernel.Call, r RunResult) (RunResult, error) {
	max := call.MaxOutputBytes
	size, err := encodedSize(r)
	if err != nil || size <= max {
		return r, err
	}
	// The frame: the result without its streams, with the note on the cut
	// at its longest and room for each stream's heading.
	frame := r
	frame.stdout, frame.stderr, frame.CutToFit = "", "", 1<<62
	fsize, err := encodedSize(frame)
	if err != nil {
		return RunResult{}, err
	}
	budget := max - fsize - int64(2*len("--- stdout ---\n\n"))
	for range 4 {
		if budget < 0 {
			break
		}
		outRoom, errRoom := share(len(r.stdout), len(r.stderr), int(budget))
		c := r
		var outCut, errCut int64
		c.stdout, outCut = cutMiddle(r.stdout, outRoom)
		c.stderr, errCut = cutMiddle(r.stderr, errRoom)
		c.CutToFit = outCut + errCut
		size, err := encodedSize(c)
		if err != nil || size <= max {
			return c, err
		}
		budget -= size - max
	}
	return RunResult{}, fault.OutputTooLarge("the result of "+call.Tool.Name+" without its output", fsize, max,
		"the command ran ("+r.status()+") and its result cannot be shown; "+kernel.RaiseHint(call.Tool.Name, "max_output_bytes"))
}

func encodedSize(r RunResult) (int64, error) {
	res, err := kernel.Encode(r)
	if err != nil {
		return 0, err
	}
	return res.Size(), nil
}

// share splits room bytes between two texts of a and b bytes: each what
// it needs when both fit, else a short one whole and the other the rest,
// else half each.
func share(a, b, room int) (int, int) {
	half := room / 2
	switch {
	case a+b <= room:
		return a, b
	case a <= half:
		return a, room - a
	case b <= half:
		return room - b, b
	}
	return half, room - half
}

// cutMiddle returns s within room bytes: s when it fits, else its head and
// tail, on character boundaries, around cutMarker stating the bytes left
// out (the marker alone when room holds no more), and that count.
func cutMiddle(s string, room int) (string, int64) {
	if len(s) <= room {
		return s, 0
	}
	keep := max(room-len(fmt.Sprintf(cutMarker, len(s))), 0)
	head, start := keep/2, len(s)-(keep-keep/2)
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return s[:head] + fmt.Sprintf(cutMarker, start-head) + s[start:], int64(start - head)
}

// closedText explains a failure that may come from a closed directory.
func (r RunResult) closedText() string {
	var b strings.Builder
	for _, d := range r.Closed {
		fmt.Fprintf(&b, "note: %s\n", sandbox.ClosedNote(d))
	}
	return b.String()
}

// ResultOf is what a tool returns for o; Stdout and Stderr give the kept
// streams the tool shows in its text.
func ResultOf(o *Outcome) RunResult {
	res := o.Result
	cg := res.Cgroup
	cg.Path = ""
	return RunResult{
		Command: o.Command, Dir: o.Dir, ExitCode: res.ExitCode, Signal: res.Signal,
		DurationMS: res.Duration.Milliseconds(), StdoutBytes: res.Stdout.Bytes, StderrBytes: res.Stderr.Bytes,
		Omitted: res.Stdout.Omitted + res.Stderr.Omitted, Containment: string(res.Containment), Notes: res.Notes, Closed: res.Closed, Leftover: res.Leftover, Cgroup: cg, Network: res.Network,
		stdout: res.Stdout.Text, stderr: res.Stderr.Text,
	}
}

// policy is a contained tool's kernel policy: the token-sized default
// output bound, or room for both streams as [run] max_output_bytes keeps
// them when that is more (streams shown longer, as bytes that are not
// UTF-8 become U+FFFD, are cut again to fit: fitOutput); its time bound
// is the longest command's; limits.RunDefaultConcurrent of its calls run
// at once.
func (r *Runner) policy(name string, longest time.Duration) kernel.Policy {
	out := r.cfg.MaxOutputBytes
	if out == 0 {
		out = limits.RunDefaultOutputBytes
	}
	return kernel.Policy{Name: name, MaxOutputBytes: max(limits.DefaultMaxOutputBytes, int64(2*out)+limits.RunResultFrameBytes),
		Timeout: min(longest+limits.RunKillGrace, limits.HardMaxTimeout), MaxConcurrent: limits.RunDefaultConcurrent}
}

// RegisterTools registers run_shell (effect run_shell, deferred) and, for
// the commands the host declared, run_test (effect run_test, hot) and
// run_build (effect run_test, deferred). opts may be nil: no command can
// then run (there is no helper), and the tools say so.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	r := NewRunner(o.Helper, &RunnerOptions{Config: o.Config, Audit: o.Audit, Warm: o.Warm})
	out := o.Config.MaxOutputBytes
	if out == 0 {
		out = limits.RunDefaultOutputBytes
	}
	max := r.timeout(0)
	err := kernel.AddTool(b, r.policy("run_shell", max),
		kernel.Meta{
			Effect:  capability.RunShell,
			Title:   "Run shell command",
			Summary: "Run a shell command in a container over the granted roots",
			Description: fmt.Sprintf(`Runs a command line with /bin/sh -c in a container: it sees the system directories and the granted roots only (no home directory, no host /tmp, %s, no other process), .git and capkit.toml stay read-only, and it runs for at most %v (timeout_seconds may ask for less). Processes it leaves behind are killed when it ends. If it creates a protected path that was missing (git init, a capkit.toml, .git/hooks), the call fails with "denied" and that path is moved out of the root; everything else it wrote stays.
Returns the exit code or signal, the duration, and stdout and stderr: of a stream longer than %d bytes, its head and tail are kept around a marker that states how many bytes were left out; streams that would not fit the tool's output bound (%s by default) are cut again the same way. A command past its time limit fails with "limit"; a failed command's output so far follows the failure's message.
Example: {"command": "ls -la && go vet ./...", "cwd": "."}`, r.networkText(), max, out, limits.Bytes(limits.DefaultMaxOutputBytes)),
		},
		func(ctx context.Context, call *kernel.Call, in ShellArgs) (RunResult, error) {
			q, err := r.shellRequest(in, max)
			if err != nil {
				return RunResult{}, err
			}
			q.afterReply = call.AfterReply
			o, err := r.run(withActor(ctx, call.Session.Actor()), call.Session.Capabilities(), q)
			if err != nil {
				return RunResult{}, withOutput(call, o, err)
			}
			return fitOutput(call, ResultOf(o))
		})
	if err != nil {
		return err
	}
	for _, t := range []struct {
		name, kind string
		set        map[string]Command
		hot        bool
	}{{"run_test", "test", o.Config.Test, true}, {"run_build", "build", o.Config.Build, false}} {
		if len(t.set) == 0 {
			continue
		}
		if err := r.registerDeclared(b, t.name, t.kind, t.set, t.hot); err != nil {
			return err
		}
	}
	return nil
}

func (r *Runner) shellRequest(in ShellArgs, max time.Duration) (request, error) {
	if in.Command == "" {
		return request{}, fault.New(fault.InvalidInput, "command is empty")
	}
	if len(in.Command) > limits.RunMaxCommandBytes {
		return request{}, fault.LimitExceeded("command bytes", limits.RunMaxCommandBytes, int64(len(in.Command)))
	}
	if len(in.Stdin) > limits.RunMaxStdinBytes {
		return request{}, fault.LimitExceeded("stdin bytes", limits.RunMaxStdinBytes, int64(len(in.Stdin)))
	}
	timeout := max
	switch asked := time.Duration(in.TimeoutSeconds) * time.Second; {
	case in.TimeoutSeconds < 0:
		return request{}, fault.New(fault.InvalidInput, "timeout_seconds must be positive")
	case asked > max:
		return request{}, fault.New(fault.Limit, "timeout_seconds %d exceeds this host's limit of %v", in.TimeoutSeconds, max).By("run.timeout=" + max.String())
	case asked > 0:
		timeout = asked
	}
	var stdin []byte
	if in.Stdin != "" {
		stdin = []byte(in.Stdin)
	}
	return request{effect: capability.RunShell, argv: []string{"/bin/sh", "-c", in.Command}, cwd: in.Cwd, stdin: stdin, timeout: timeout}, nil
}

// registerDeclared registers a tool that runs declared commands.
func (r *Runner) registerDeclared(b *kernel.Builder, name, kind string, set map[string]Command, hot bool) error {
	effect := capability.RunTest
	var names, lines []string
	longest := time.Duration(0)
	for n := range set {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		c := set[n]
		longest = max(longest, r.timeout(c.Timeout))
		label := n
		if n == "" {
			label = "(default)"
		}
		extra := "no extra arguments"
		if c.Args != nil {
			extra = "extra arguments matching " + c.Args.String()
		}
		lines = append(lines, fmt.Sprintf("  %s: %s (%s, at most %v)", label, strings.Join(c.Argv, " "), extra, r.timeout(c.Timeout)))
	}
	return kernel.AddTool(b, r.policy(name, longest),
		kernel.Meta{
			Effect:  effect,
			Hot:     hot,
			Title:   "Run " + kind + " command",
			Summary: fmt.Sprintf("Run the %s command the host declared, contained, and read its result", kind),
			Description: fmt.Sprintf(`Runs a %s command the host declared, in the same container as run_shell (the granted roots only, %s, .git and capkit.toml read-only; creating a missing one fails the call with "denied" and moves it out of the root). The declared commands:
%s
Returns the exit code, the duration, and stdout and stderr, each cut to its first and last bytes around a marker stating how many were left out (again where both would not fit the tool's output bound). A command past its time limit fails with "limit"; a failed command's output so far follows the failure's message.
Example: {"name": "", "args": []}`, kind, r.networkText(), strings.Join(lines, "\n")),
		},
		func(ctx context.Context, call *kernel.Call, in DeclaredArgs) (RunResult, error) {
			q, err := r.declaredRequest(kind, in.Name, in.Args, in.Cwd)
			if err != nil {
				return RunResult{}, err
			}
			q.afterReply = call.AfterReply
			o, err := r.run(withActor(ctx, call.Session.Actor()), call.Session.Capabilities(), q)
			if err != nil {
				return RunResult{}, withOutput(call, o, err)
			}
			return fitOutput(call, ResultOf(o))
		})
}

// shownHosts bounds the host names a tool description lists.
const shownHosts = 12

// networkText says what network the commands have, for the tools'
// descriptions.
func (r *Runner) networkText() string {
	if r.cfg.Network == nil {
		return "no network"
	}
	hosts := r.cfg.Network.Policy().Hosts
	list := strings.Join(hosts[:min(len(hosts), shownHosts)], ", ")
	if len(hosts) > shownHosts {
		list += fmt.Sprintf(" and %d more", len(hosts)-shownHosts)
	}
	return "a network only through the host's policy proxy (HTTP_PROXY and HTTPS_PROXY name it; names are resolved there), to the hosts " + list
}
