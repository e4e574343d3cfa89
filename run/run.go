// Package run gives a model contained commands: run_test and run_build
// run the commands the host declared ([test] and [build] in capkit.toml)
// with extra arguments only where the host allowed a pattern for them;
// run_shell runs any command through /bin/sh -c. Every command runs in the
// container of package run/sandbox, over the roots the session is granted
// the tool's effect on (writable) and read_file on (read-only), and its
// result reports the exit code or signal, the duration, both output
// streams bounded (head and tail around a stated omission), and how it
// was contained.
package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/egress"
	"github.com/capkit/capkit/run/sandbox"
)

// Command is a command the host declared.
type Command struct {
	// Argv is the program and its arguments.
	Argv []string
	// Args is the pattern every extra argument from the model must match
	// in whole; nil allows none.
	Args *regexp.Regexp
	// Dir is the working directory relative to the root; "" is the root.
	Dir string
	// Timeout bounds the command; zero means Config.Timeout.
	Timeout time.Duration
}

// Config is the host's settings for contained commands.
type Config struct {
	// RequireFull refuses to run a command with reduced containment
	// (where user namespaces are unavailable): such calls fail with
	// unavailable.
	RequireFull bool
	// Reduced runs every command with reduced containment (Landlock,
	// seccomp and rlimits, no namespaces), as a host without user
	// namespaces would.
	Reduced bool
	// Env are KEY=VALUE pairs the host adds to the commands' environment
	// (PATH, LANG and TERM are set; HOME and TMPDIR point into the
	// private /tmp; the cache variables point into Cache), overriding
	// capkit's own.
	Env []string
	// Protected are the paths kept read-only in the writable roots (the
	// zero value: .git and capkit.toml).
	Protected capability.Protected
	// Quarantine is the directory, outside every root, that receives what
	// a command leaves at a protected name that was missing; "" is
	// sandbox.Options.Quarantine's default.
	Quarantine string
	// ReadOnly and Writable are directories outside the roots shown to
	// every command: toolchains read-only; writable, directories that
	// only contained commands use (one the host itself uses could be
	// poisoned through it).
	ReadOnly []string
	Writable []string
	// Cache is the base directory of the persistent tool caches (see
	// cache.go; DefaultCacheDir is the usual one); "" runs without them.
	Cache string
	// CacheBytes bounds the base; zero is limits.RunDefaultCacheBytes.
	CacheBytes int64
	// Limits bound each command's resources; zero fields are the defaults.
	Limits sandbox.Limits
	// MaxOutputBytes bounds each output stream; zero is
	// limits.RunDefaultOutputBytes.
	MaxOutputBytes int
	// Timeout bounds a command when neither the call nor its declaration
	// gives one; zero is limits.RunDefaultTimeout.
	Timeout time.Duration
	// Test and Build are the declared commands by variant name; "" is the
	// default variant.
	Test  map[string]Command
	Build map[string]Command
	// Network, when set, gives every command a network through this
	// policy proxy alone (run/sandbox's Options.Proxy): the destinations
	// its HTTP policy admits, with its budget if it has one; nil runs
	// commands without a network. A network needs full containment.
	Network *egress.Proxy
	// NetworkTask is the budget task the proxy charges; "" is the
	// session's actor (the proxy's own task outside a session).
	NetworkTask string
}

// defaultPath is the commands' PATH unless the host sets one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin"

// Runner runs contained commands for sessions.
type Runner struct {
	cfg    Config
	helper []string
	audit  *slog.Logger
	warm   *sandbox.Warm
	caches caches
	said   saidNotes
}

// RunnerOptions configure a Runner. The zero value runs with the defaults.
type RunnerOptions struct {
	// Config is the host's settings.
	Config Config
	// Audit receives one event per command saying how it was contained;
	// nil disables it.
	Audit *slog.Logger
	// Warm, when set, keeps the next command's container built ahead
	// (a server's; a one-shot command gains nothing from it). Its owner
	// closes it.
	Warm *sandbox.Warm
}

// NewRunner returns a Runner starting helper as the sandbox helper: a
// program linking run/sandbox, given sandbox.HelperArg. opts may be nil.
func NewRunner(helper []string, opts *RunnerOptions) *Runner {
	r := &Runner{helper: helper}
	if opts != nil {
		r.cfg, r.audit, r.warm = opts.Config, opts.Audit, opts.Warm
	}
	r.caches = caches{base: r.cfg.Cache, bound: cmp.Or(r.cfg.CacheBytes, limits.RunDefaultCacheBytes)}
	return r
}

// Command runs argv contained, over the roots caps grants effect on
// (writable) and read_file on (read-only), in cwd (relative to the first
// writable root, or absolute inside a root; "" is that root), for at most
// timeout (zero: the configured bound). stdin nil means /dev/null.
// A command that ran and still failed the call (it left protected paths,
// passed a bound or its time limit, or was canceled) returns its Outcome
// with the error, so that what it wrote can be shown.
func (r *Runner) Command(ctx context.Context, caps capability.Set, effect capability.Effect, argv []string, cwd string, stdin []byte, timeout time.Duration) (*Outcome, error) {
	return r.run(ctx, caps, request{effect: effect, argv: argv, cwd: cwd, stdin: stdin, timeout: r.timeout(timeout)})
}

// Declared runs the declared command of kind ("test" or "build") and
// variant name ("" the default) with the extra args, which must match
// its pattern; caps must grant run_test.
func (r *Runner) Declared(ctx context.Context, caps capability.Set, kind, name string, args []string, cwd string) (*Outcome, error) {
	q, err := r.declaredRequest(kind, name, args, cwd)
	if err != nil {
		return nil, err
	}
	return r.run(ctx, caps, q)
}

func (r *Runner) declaredRequest(kind, name string, args []string, cwd string) (request, error) {
	set := r.cfg.Test
	if kind == "build" {
		set = r.cfg.Build
	}
	c, argv, err := declared(kind, set, name, args)
	if err != nil {
		return request{}, err
	}
	return request{effect: capability.RunTest, argv: argv, cwd: cwd, dir: c.Dir, timeout: r.timeout(c.Timeout)}, nil
}

// Outcome is one finished command.
type Outcome struct {
	Result  *sandbox.Result
	Command []string
	Dir     string
}

// request is one command to run.
type request struct {
	effect  capability.Effect
	argv    []string
	cwd     string // from the call; "" is the first writable root
	dir     string // the declared command's, relative to the root
	stdin   []byte
	timeout time.Duration
	// afterReply defers work until the call's answer is sent (a tool
	// call's kernel.Call.AfterReply); nil: none to wait for.
	afterReply func(func())
}

func (r *Runner) timeout(asked time.Duration) time.Duration {
	if asked > 0 {
		return asked
	}
	if r.cfg.Timeout > 0 {
		return r.cfg.Timeout
	}
	return limits.RunDefaultTimeout
}

// run runs one command in a container over the session's roots, with
// the cache of those roots.
func (r *Runner) run(ctx context.Context, caps capability.Set, q request) (*Outcome, error) {
	if r.helper == nil {
		return nil, errNoHelper
	}
	writable, readOnly, err := r.roots(caps, q.effect)
	if err != nil {
		return nil, err
	}
	dir, err := workingDir(slices.Concat(writable, readOnly), q.cwd, q.dir)
	if err != nil {
		return nil, err
	}
	cache, note, err := r.caches.acquire(writable, readOnly)
	if err != nil {
		return nil, err
	}
	res, timedOut, err := r.contained(ctx, r.spec(q, dir, writable, readOnly, cache), q)
	cache.release()
	if err != nil {
		return nil, err
	}
	for _, n := range []string{note, r.caches.trimIfDue(ctx)} {
		if n != "" {
			res.Notes = append(res.Notes, n)
		}
	}
	r.audited(ctx, caps, q, res)
	return &Outcome{Result: res, Command: q.argv, Dir: dir}, failure(res, timedOut, q.timeout)
}

// failure is why a command that ran failed the call, or nil.
func failure(res *sandbox.Result, timedOut bool, timeout time.Duration) error {
	switch {
	case len(res.Quarantined) > 0:
		return quarantined(res)
	case res.Exceeded != "":
		return fault.New(fault.Limit, "the command was killed with every process it started: %s (it wrote %d bytes to stdout and %d to stderr)",
			res.Exceeded, res.Stdout.Bytes, res.Stderr.Bytes).By(res.ExceededBound)
	case res.Killed && timedOut:
		return fault.New(fault.Limit, "the command ran past its time limit of %v and was killed with every process it started (it wrote %d bytes to stdout and %d to stderr)",
			timeout, res.Stdout.Bytes, res.Stderr.Bytes).By("run.timeout=" + timeout.String())
	case res.Killed:
		return fault.New(fault.Unavailable, "the call was canceled; the command was killed with every process it started")
	}
	return nil
}

// roots are the roots a command over caps sees writable (those granted
// effect) and read-only (those granted read_file only). A root that is
// or lies in a protected path (a client root narrowed to .git) is shown
// read-only whole: the protected paths the container keeps read-only
// lie inside writable roots, never are one.
func (r *Runner) roots(caps capability.Set, effect capability.Effect) (writable, readOnly []string, err error) {
	granted := caps.Roots(effect)
	if len(granted) == 0 {
		return nil, nil, fault.New(fault.Denied, "no root is granted for %s", effect).By("roots")
	}
	for _, root := range granted {
		if r.cfg.Protected.Covers(root) {
			readOnly = append(readOnly, root)
		} else {
			writable = append(writable, root)
		}
	}
	for _, root := range caps.Roots(capability.ReadFile) {
		if !slices.Contains(granted, root) {
			readOnly = append(readOnly, root)
		}
	}
	return writable, readOnly, nil
}

// spec is the container of one command: its roots, the host's extra
// directories, and the cache's tools directory.
func (r *Runner) spec(q request, dir string, writable, readOnly []string, cache *cacheUse) *sandbox.Spec {
	s := &sandbox.Spec{
		Argv:      q.argv,
		Dir:       dir,
		Env:       r.env(cache),
		Writable:  slices.Concat(writable, r.cfg.Writable),
		ReadOnly:  slices.Concat(readOnly, r.cfg.ReadOnly),
		Protected: r.cfg.Protected.Paths(writable),
		Limits:    r.cfg.Limits,
	}
	if cache != nil {
		s.Writable = append(s.Writable, cache.tools)
	}
	return s
}

// contained runs spec within the request's time bound, and says whether
// that bound passed.
func (r *Runner) contained(ctx context.Context, spec *sandbox.Spec, q request) (*sandbox.Result, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, q.timeout)
	defer cancel()
	o := &sandbox.Options{
		Helper: r.helper, Stdin: q.stdin, MaxOutputBytes: r.cfg.MaxOutputBytes,
		Reduced: r.cfg.Reduced, RequireFull: r.cfg.RequireFull, Warm: r.warm, Quarantine: r.cfg.Quarantine,
		AfterReply: q.afterReply,
	}
	if p := r.proxy(ctx); p != nil {
		o.Proxy = p
	}
	res, err := sandbox.Run(ctx, spec, o)
	return res, errors.Is(ctx.Err(), context.DeadlineExceeded), err
}

// proxy is the network proxy of one command, charging the configured
// task or the session's actor; nil without a network.
func (r *Runner) proxy(ctx context.Context) *egress.Proxy {
	p := r.cfg.Network
	if p == nil {
		return nil
	}
	if task := cmp.Or(r.cfg.NetworkTask, actorOf(ctx)); task != "" {
		return p.WithTask(task)
	}
	return p
}

// actorKey carries the calling session's actor to the proxy's budget.
type actorKey struct{}

func withActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

func actorOf(ctx context.Context) string {
	a, _ := ctx.Value(actorKey{}).(string)
	return a
}

// quarantined is the failure of a command that left entries at protected
// names: each path, and where it went.
func quarantined(res *sandbox.Result) error {
	moves := make([]string, len(res.Quarantined))
	for i, m := range res.Quarantined {
		moves[i] = m.Path
		if m.To != "" {
			moves[i] += " -> " + m.To
		}
		if m.Note != "" {
			moves[i] += " (" + m.Note + ")"
		}
	}
	ended := fmt.Sprintf("exited with code %d", res.ExitCode)
	if res.Signal != "" {
		ended = "was killed by " + res.Signal
	}
	return fault.New(fault.Denied, "the command (which %s) created protected paths, which the host's git and capkit would read or run; they were moved out of the root into the quarantine: %s",
		ended, strings.Join(moves, "; ")).By("protected")
}

// audited records how a command was contained: the kernel's audit event
// says that the call ran, this one how (reduced containment is weaker).
// Its notes (what was weaker than full: an older Landlock, a cgroup limit
// not applied) are the host's, the same on every call, so each is said
// once per Runner, on the first event that has it; the cgroup's missing
// limits are among them.
func (r *Runner) audited(ctx context.Context, caps capability.Set, q request, res *sandbox.Result) {
	if r.audit == nil {
		return
	}
	cg := res.Cgroup
	cg.Missing = nil
	attrs := []slog.Attr{slog.String("effect", string(q.effect)), slog.String("containment", string(res.Containment))}
	if notes := r.said.unsaid(res.Notes); len(notes) > 0 {
		attrs = append(attrs, slog.Any("notes", notes))
	}
	attrs = append(attrs, slog.Any("cgroup", cg), slog.Int("exit_code", res.ExitCode), slog.String("signal", res.Signal),
		slog.Bool("killed", res.Killed), slog.String("exceeded", res.Exceeded), slog.Any("quarantined", res.Quarantined),
		slog.String("leftover", res.Leftover), slog.Int64("duration_us", res.Duration.Microseconds()))
	r.audit.LogAttrs(ctx, slog.LevelInfo, "contained command", attrs...)
}

// saidNotes are the containment notes a Runner's audit events have said.
type saidNotes struct {
	mu   sync.Mutex
	said map[string]bool
}

// unsaid are the notes not said before, now counted as said. Past
// limits.RunAuditNotesKept distinct notes, new ones are said every time
// (a bound on what is kept, never a note left out).
func (s *saidNotes) unsaid(notes []string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, n := range notes {
		if s.said[n] {
			continue
		}
		out = append(out, n)
		if len(s.said) < limits.RunAuditNotesKept {
			if s.said == nil {
				s.said = map[string]bool{}
			}
			s.said[n] = true
		}
	}
	return out
}

// workingDir resolves the call's cwd as the file tools resolve a path
// (relative to the first of roots, or absolute inside one; "" is that
// root) and the declared command's dir beneath it, and checks that it is
// a directory reached without leaving its root.
func workingDir(roots []string, cwd, dir string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	t, err := scope.In(roots, capability.Protected{}).Resolve(cwd)
	if err != nil {
		return "", err
	}
	if dir != "" {
		name := path.Join(t.Name(), filepath.ToSlash(dir))
		root := t.Root()
		t.Close()
		if t, err = scope.In([]string{root}, capability.Protected{}).Resolve(name); err != nil {
			return "", err
		}
	}
	defer t.Close()
	d, _, err := t.OpenTree("directory")
	if err != nil {
		return "", err
	}
	d.Close()
	return t.HostPath(), nil
}

// env is the commands' environment: capkit's (with the cache variables
// when the run has a cache), then the host's, which overrides it.
func (r *Runner) env(cache *cacheUse) []string {
	env := []string{"PATH=" + defaultPath, "LANG=C.UTF-8", "TERM=dumb"}
	if cache != nil {
		env = append(env, cache.env()...)
	}
	for _, kv := range r.cfg.Env {
		k, _, _ := strings.Cut(kv, "=")
		env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, k+"=") })
		env = append(env, kv)
	}
	return env
}

// declared picks the named variant of a declared command and appends the
// model's extra arguments, each of which must match the host's pattern.
func declared(kind string, set map[string]Command, name string, args []string) (Command, []string, error) {
	c, ok := set[name]
	if !ok {
		names := make([]string, 0, len(set))
		for n := range set {
			if n == "" {
				n = "(default)"
			}
			names = append(names, n)
		}
		slices.Sort(names)
		return Command{}, nil, fault.New(fault.NotFound, "no %s command %q is declared; the host declared: %s", kind, name, strings.Join(names, ", "))
	}
	if len(args) > 0 && c.Args == nil {
		return Command{}, nil, fault.New(fault.Denied, "the host allows no extra arguments to this %s command", kind).By("run.args")
	}
	if len(args) > limits.RunMaxArgs {
		return Command{}, nil, fault.LimitExceeded("extra arguments", limits.RunMaxArgs, int64(len(args)))
	}
	for _, a := range args {
		if len(a) > limits.RunMaxArgBytes {
			return Command{}, nil, fault.LimitExceeded("an extra argument's bytes", limits.RunMaxArgBytes, int64(len(a)))
		}
		if !c.Args.MatchString(a) {
			return Command{}, nil, fault.New(fault.Denied, "extra argument %q does not match the pattern the host allows (%s)", a, c.Args).By("run.args")
		}
	}
	return c, append(slices.Clone(c.Argv), args...), nil
}

var errNoHelper = fault.New(fault.Unavailable, "contained commands are not configured on this host (no sandbox helper)")

// AnchoredPattern compiles a host's argument pattern so that it must match
// a whole argument.
func AnchoredPattern(p string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(`^(?:` + p + `)$`)
	if err != nil {
		return nil, fmt.Errorf("argument pattern %q: %w", p, err)
	}
	return re, nil
}
