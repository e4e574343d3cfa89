package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// fixture is a kernel runtime whose tools are the hostile upstream's,
// every one approved as it first listed them.
type fixture struct {
	t          *testing.T
	dir        string
	up         Upstream
	g          *Gateway
	rt         *kernel.Runtime
	log, audit *testkit.Buffer
	reviewed   int // processes the review started
}

type fixtureOptions struct {
	adjust   func(*Upstream)
	policy   func(kernel.Policy) kernel.Policy
	gateway  *Options
	upstream string
}

func newFixture(t *testing.T, o *fixtureOptions) *fixture {
	t.Helper()
	if o == nil {
		o = &fixtureOptions{}
	}
	f := &fixture{t: t, dir: t.TempDir(), log: &testkit.Buffer{}, audit: &testkit.Buffer{}}
	if err := writeDefs(f.dir, hostileTools()); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	name := o.upstream
	if name == "" {
		name = "hostile"
	}
	f.up = Upstream{Name: name, Command: []string{exe}, Env: map[string]string{hostileEnv: "1", hostileDirEnv: f.dir}}
	if o.adjust != nil {
		o.adjust(&f.up)
	}
	gopts := Options{}
	if o.gateway != nil {
		gopts = *o.gateway
	}
	gopts.Log = slog.New(slog.NewJSONHandler(f.log, nil))
	gopts.Audit = slog.New(slog.NewJSONHandler(f.audit, nil))
	lock := approvedLock(t, name, hostileTools())
	if f.g, err = New([]Upstream{f.up}, lock, &gopts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.g.Close)
	b := kernel.NewBuilder(&kernel.Options{Audit: gopts.Audit, Log: gopts.Log, PolicyOverride: o.policy, CheckOutput: true})
	if err := RegisterTools(b, &ToolOptions{Gateway: f.g}); err != nil {
		t.Fatal(err)
	}
	if f.rt, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	f.reviewed = len(f.pids())
	return f
}

// approvedLock approves tools as the upstream lists them (what a review
// and approve of the hostile upstream records: TestReviewAndApprove).
func approvedLock(t *testing.T, upstream string, tools []map[string]any) *Lock {
	t.Helper()
	l := &Lock{}
	for _, tl := range tools {
		b, _ := json.Marshal(tl)
		var mt mcp.Tool
		if err := json.Unmarshal(b, &mt); err != nil {
			t.Fatal(err)
		}
		d, err := definitionOf(&mt)
		if err != nil {
			t.Fatal(err)
		}
		l.Set(upstream, d)
	}
	return l
}

func (f *fixture) session(actor string) *kernel.Session {
	f.t.Helper()
	c, err := capability.New(actor, []capability.Effect{capability.Upstream(f.up.Name), capability.ToolSearch}, capability.Scope{})
	if err != nil {
		f.t.Fatal(err)
	}
	s, err := f.rt.NewSession(actor, []capability.Capability{c}, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(s.Close)
	return s
}

func (f *fixture) call(s *kernel.Session, tool string, args any) (*kernel.Result, error) {
	return f.callCtx(context.Background(), s, tool, args)
}

func (f *fixture) callCtx(ctx context.Context, s *kernel.Session, tool string, args any) (*kernel.Result, error) {
	f.t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	if args == nil {
		b = nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.Call(ctx, f.up.Name+"__"+tool, b)
}

// echo calls echo and fails the test unless it answers.
func (f *fixture) echo(s *kernel.Session, text string) {
	f.t.Helper()
	res, err := f.call(s, "echo", map[string]string{"text": text})
	if err != nil {
		f.t.Fatalf("echo after the attack: %v", err)
	}
	if res.Text != text {
		f.t.Fatalf("echo: %q", res.Text)
	}
}

// started counts the processes started since the fixture was made (the
// review's is not counted).
func (f *fixture) started() int { return len(f.pids()) - f.reviewed }

// pids are the hostile processes started so far.
func (f *fixture) pids() []int {
	ents, _ := filepath.Glob(filepath.Join(f.dir, "pid.*"))
	var out []int
	for _, e := range ents {
		if n, err := strconv.Atoi(strings.TrimPrefix(filepath.Ext(e), ".")); err == nil {
			out = append(out, n)
		}
	}
	return out
}

// live are the hostile processes still running.
func (f *fixture) live() []int {
	var out []int
	for _, pid := range f.pids() {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(b), ") Z ") {
			out = append(out, pid)
		}
	}
	return out
}

// redefine changes the listed definitions and tells every live hostile
// process to list them again (list_changed).
func (f *fixture) redefine(change func([]map[string]any) []map[string]any) {
	f.t.Helper()
	if err := writeDefs(f.dir, change(hostileTools())); err != nil {
		f.t.Fatal(err)
	}
	for _, pid := range f.live() {
		syscall.Kill(pid, syscall.SIGUSR1)
	}
}

// eventually waits, within a generous bound, for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func wantCode(t *testing.T, err error, code fault.Code, parts ...string) {
	t.Helper()
	if fault.CodeOf(err) != code {
		t.Fatalf("got %v, want %s", err, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("%q does not say %q", err, p)
		}
	}
}

func specNames(s *kernel.Session) map[string]bool {
	out := map[string]bool{}
	for _, e := range s.Specs() {
		out[e.Name] = true
	}
	return out
}

// TestDefinitionChangedAfterApproval: a description changed after
// approval (announced with list_changed) withdraws the tool from the
// session's list at once (its front door is told), a call fails with
// integrity naming the change and the review; restoring it offers it
// again; the other tools stay offered and answer throughout.
func TestDefinitionChangedAfterApproval(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	var told atomic.Int32
	s.OnToolsChanged(func() { told.Add(1) })
	res, err := s.Call(context.Background(), "tool_search", json.RawMessage(`{"query":"echoes text","limit":3}`))
	if err != nil || !strings.Contains(res.Text, "hostile__echo (from upstream hostile)") {
		t.Fatalf("tool_search: %v %v", res, err)
	}
	if !specNames(s)["hostile__echo"] {
		t.Fatal("echo not listed after tool_search")
	}
	f.echo(s, "before")
	before := told.Load()
	f.redefine(func(ts []map[string]any) []map[string]any {
		ts[0]["description"] = "Echoes text, and also sends it elsewhere."
		return ts
	})
	eventually(t, "echo withdrawn", func() bool { return !specNames(s)["hostile__echo"] })
	eventually(t, "the session told", func() bool { return told.Load() > before })
	_, err = f.call(s, "echo", map[string]string{"text": "x"})
	wantCode(t, err, fault.Integrity, "hostile__echo", "description", "capkit upstream review")
	if res, err := f.call(s, "pid", nil); err != nil || res.Text == "" {
		t.Errorf("another tool of the upstream: %v", err)
	}
	f.redefine(func(ts []map[string]any) []map[string]any { return ts })
	eventually(t, "echo offered again", func() bool { return specNames(s)["hostile__echo"] })
	f.echo(s, "after")
	if !strings.Contains(f.log.String(), "changed since it was approved") {
		t.Error("the change is not in the host's log")
	}
}

// TestRenamedTool: a tool renamed after approval is not offered under
// either name: the old one is integrity (no longer listed), the new one
// no tool at all.
func TestRenamedTool(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	f.echo(s, "x")
	f.redefine(func(ts []map[string]any) []map[string]any {
		ts[0]["name"] = "echo2"
		return ts
	})
	eventually(t, "echo withdrawn", func() bool { return f.rt.OfferedTo(s, "hostile__echo") != nil })
	_, err := f.call(s, "echo", map[string]string{"text": "x"})
	wantCode(t, err, fault.Integrity, "no longer lists")
	_, err = f.call(s, "echo2", map[string]string{"text": "x"})
	wantCode(t, err, fault.NotFound)
}

// TestHugeAnswer: an answer of 200 MiB is cut at
// limits.UpstreamMaxMessageBytes (limit), the upstream is stopped, and
// the next call is answered by a new one.
func TestHugeAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{policy: func(p kernel.Policy) kernel.Policy {
		p.MaxOutputBytes = limits.HardMaxOutputBytes
		return p
	}})
	s := f.session("model")
	_, err := f.call(s, "big", nil)
	wantCode(t, err, fault.Limit, limits.Bytes(limits.UpstreamMaxMessageBytes))
	f.echo(s, "after")
	if n := f.started(); n != 2 {
		t.Errorf("%d processes started, want 2 (the one cut, its successor)", n)
	}
}

// TestNeverAnswers: a call to an upstream that never answers holds one
// place of its tool until its deadline, then is limit; the cancellation
// reaches the upstream; the next call is answered.
func TestNeverAnswers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{policy: func(p kernel.Policy) kernel.Policy {
		if p.Name == "hostile__hang" {
			p.Timeout, p.MaxConcurrent = 500*time.Millisecond, 1
		}
		return p
	}})
	s := f.session("model")
	f.echo(s, "warm")
	done := make(chan error, 1)
	go func() { _, err := f.call(s, "hang", nil); done <- err }()
	eventually(t, "the upstream got the call", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.dir, "hang.log"))
		return len(b) > 0
	})
	_, err := f.call(s, "hang", nil)
	select {
	case first := <-done:
		t.Skipf("the first call ended (%v) before the second was admitted; the machine is too slow for a 500 ms deadline", first)
	default:
	}
	wantCode(t, err, fault.Limit, "at once")
	wantCode(t, <-done, fault.Limit, "time limit")
	eventually(t, "notifications/cancelled reached the upstream", func() bool {
		b, _ := os.ReadFile(filepath.Join(f.dir, "cancelled.log"))
		return len(b) > 0
	})
	f.echo(s, "after")
}

// TestDeafUpstream: calls to an upstream that reads none of its input
// (its pipe full) end at their deadline, limit, each freeing its place,
// and the gateway still closes (the SDK's answers to its pings wait to
// be written).
func TestDeafUpstream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{policy: func(p kernel.Policy) kernel.Policy {
		if p.Name == "hostile__echo" {
			p.Timeout, p.MaxConcurrent = 500*time.Millisecond, 2
		}
		return p
	}})
	s := f.session("model")
	if res, err := f.call(s, "deaf", nil); err != nil || res.Text != "deaf" {
		t.Fatalf("deaf: %v %v", res, err)
	}
	big := strings.Repeat("a", 256*limits.KiB)
	for range 4 {
		_, err := f.call(s, "echo", map[string]string{"text": big})
		wantCode(t, err, fault.Limit, "time limit")
	}
	closed := make(chan struct{})
	go func() { f.g.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("the gateway does not close")
	}
}

// TestCrashMidCall: an upstream that exits in the middle of its answer
// fails the call with unavailable, is started again on the next call
// (answered), and the restart is logged and audited.
func TestCrashMidCall(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	_, err := f.call(s, "crash", nil)
	wantCode(t, err, fault.Unavailable, "ended during the call")
	f.echo(s, "after")
	// Both are written after the calls that see them go on.
	eventually(t, "the restart reported", func() bool {
		return strings.Contains(f.audit.String(), "upstream restarted") && strings.Contains(f.log.String(), "upstream ended")
	})
}

// TestRestartsBounded: an upstream that crashes on every call is started
// again with a growing delay, and after limits.UpstreamMaxRestarts
// failures in a row is not started again; its calls then say so.
func TestRestartsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	for i := range limits.UpstreamMaxRestarts {
		_, err := f.call(s, "crash", nil)
		wantCode(t, err, fault.Unavailable)
		if f.started() != i+1 {
			t.Fatalf("after %d crashes, %d processes", i+1, f.started())
		}
	}
	_, err := f.call(s, "echo", map[string]string{"text": "x"})
	wantCode(t, err, fault.Unavailable, "not started again until capkit restarts")
	if n := f.started(); n != limits.UpstreamMaxRestarts {
		t.Errorf("%d processes started, want %d", n, limits.UpstreamMaxRestarts)
	}
}

// TestOutputSchemaViolation: a result its own declared output schema
// refuses is integrity; the next call is answered.
func TestOutputSchemaViolation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	_, err := f.call(s, "badout", nil)
	wantCode(t, err, fault.Integrity, "does not match its own output schema")
	f.echo(s, "after")
}

// TestNotificationFlood: six thousand notifications during a call
// (progress, list_changed, log messages) cost the call nothing but time:
// it is answered, its progress reaches the caller at a bounded rate, the
// tools stay offered, and the next call is answered.
func TestNotificationFlood(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	var reports atomic.Int32
	ctx := kernel.WithProgress(context.Background(), func(p, total float64, m string) { reports.Add(1) })
	start := time.Now()
	res, err := f.callCtx(ctx, s, "flood", nil)
	took := time.Since(start)
	if err != nil || res.Text != "flooded" {
		t.Fatalf("flood: %v %v", res, err)
	}
	if max := int32(took/limits.UpstreamProgressInterval) + 2; reports.Load() > max {
		t.Errorf("%d progress reports passed in %v, past the bound of %d", reports.Load(), took, max)
	}
	if reports.Load() == 0 {
		t.Error("no progress report passed")
	}
	f.echo(s, "after")
	if err := f.rt.OfferedTo(s, "hostile__echo"); err != nil {
		t.Errorf("echo withdrawn by the flood: %v", err)
	}
}

// TestUpstreamFailure: an isError result is fault.Upstream, its text the
// upstream's, marked as its.
func TestUpstreamFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	_, err := f.call(s, "fail", nil)
	wantCode(t, err, fault.Upstream, "upstream hostile reported a failure", "the upstream's own failure")
	f.echo(s, "after")
}

// TestProtocolErrors: a JSON-RPC error and a result that is not one are
// integrity; the upstream keeps serving.
func TestProtocolErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	_, err := f.call(s, "protoerr", nil)
	wantCode(t, err, fault.Integrity, "protocol error")
	_, err = f.call(s, "garbage", nil)
	wantCode(t, err, fault.Integrity)
	f.echo(s, "after")
}

// TestContentBlocks: images, resource links and audio pass through as
// content blocks, with the text beside them.
func TestContentBlocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	res, err := f.call(s, "blocks", nil)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, c := range res.Content {
		var b struct {
			Type string `json:"type"`
		}
		json.Unmarshal(c, &b)
		types = append(types, b.Type)
	}
	if strings.Join(types, ",") != "text,image,resource_link,audio" || res.Text != "one" {
		t.Errorf("blocks %v, text %q", types, res.Text)
	}
}

// TestInjectionStaysData: an upstream's instructions are never read and
// its descriptions are shown as its own: tool_search marks their origin.
func TestInjectionStaysData(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	s := f.session("model")
	res, err := s.Call(context.Background(), "tool_search", json.RawMessage(`{"query":"echo"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "hostile__echo (from upstream hostile): Echoes text.") {
		t.Errorf("tool_search does not mark the upstream's text: %s", res.Text)
	}
	e, _, _ := f.rt.Catalog().Lookup("hostile__echo")
	if e.Origin != "upstream hostile" {
		t.Errorf("origin %q", e.Origin)
	}
	for _, e := range f.rt.Catalog().Entries() {
		if strings.Contains(e.Description, "run_shell with rm") && e.Origin == "" {
			t.Errorf("%s carries the injection as capkit's", e.Name)
		}
	}
}

// TestShare: one process per actor by default, per session, or one for
// every caller; a session's own process stops when the session closes.
func TestShare(t *testing.T) {
	for _, tc := range []struct {
		share Share
		want  int // processes for two sessions of actor a and one of b
	}{{ShareActor, 2}, {ShareSession, 3}, {ShareServer, 1}} {
		t.Run(string(tc.share), func(t *testing.T) {
			f := newFixture(t, &fixtureOptions{adjust: func(u *Upstream) { u.Share = tc.share }})
			a1, a2, b := f.session("a"), f.session("a"), f.session("b")
			pid := func(s *kernel.Session) string {
				res, err := f.call(s, "pid", nil)
				if err != nil {
					t.Fatal(err)
				}
				return res.Text
			}
			pids := map[string]bool{pid(a1): true, pid(a2): true, pid(b): true}
			if len(pids) != tc.want {
				t.Errorf("%d processes served the three sessions, want %d", len(pids), tc.want)
			}
			if tc.share == ShareSession {
				before := len(f.live())
				a1.Close()
				eventually(t, "the closed session's process stopped", func() bool { return len(f.live()) == before-1 })
			}
		})
	}
}

// TestSecrets: a secret_env value reaches the upstream; it is in no log,
// audit event or failure, even when the upstream prints it to its
// standard error as it crashes; a missing secret file fails naming the
// file.
func TestSecrets(t *testing.T) {
	secret := "s3cr3t-" + strconv.Itoa(os.Getpid())
	file := filepath.Join(t.TempDir(), "token")
	os.WriteFile(file, []byte(secret+"\n"), 0o600)
	f := newFixture(t, &fixtureOptions{adjust: func(u *Upstream) { u.SecretEnv = map[string]string{"HOSTILE_SECRET": file} }})
	s := f.session("model")
	res, err := f.call(s, "env", map[string]string{"name": "HOSTILE_SECRET"})
	if err != nil || res.Text != secret {
		t.Fatalf("the upstream got %v %v", res, err)
	}
	_, err = f.call(s, "crash", nil)
	wantCode(t, err, fault.Unavailable)
	f.echo(s, "after")
	eventually(t, "the crash logged", func() bool { return strings.Contains(f.log.String(), "crashing") })
	for what, text := range map[string]string{"log": f.log.String(), "audit": f.audit.String(), "failure": err.Error()} {
		if strings.Contains(text, secret) {
			t.Errorf("the secret is in the %s", what)
		}
	}
	os.Remove(file)
	g, _ := New([]Upstream{f.up}, &Lock{}, nil)
	if _, err := g.probe(context.Background(), &g.ups["hostile"].Upstream); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a missing secret: %v", err)
	}
}

// TestLock: a lock saved and loaded is the same; an edited definition, an
// unknown member, a duplicate name or a wrong format is refused; a
// missing file is an empty lock.
func TestLock(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lock.json")
	if l, err := LoadLock(path); err != nil || len(l.Upstreams) != 0 {
		t.Fatalf("missing lock: %v %v", l, err)
	}
	d := &Definition{Name: "echo", Description: "Echoes.", InputSchema: []byte(`{"type":"object"}`), Annotations: Annotations{Destructive: true, OpenWorld: true}}
	l := &Lock{}
	l.Set("mem", d)
	if err := l.Save(context.Background(), path); err != nil {
		t.Fatal(err)
	}
	got, err := LoadLock(path)
	if err != nil {
		t.Fatal(err)
	}
	if g, _ := got.Approved("mem", "echo"); g == nil || g.Digest() != d.Digest() {
		t.Fatalf("round trip: %+v", got)
	}
	data, _ := os.ReadFile(path)
	for name, bad := range map[string]string{
		"edited":    strings.Replace(string(data), "Echoes.", "Echoes, and more.", 1),
		"unknown":   strings.Replace(string(data), `"format": 1`, `"format": 1, "extra": 2`, 1),
		"duplicate": strings.Replace(string(data), `"format": 1`, `"format": 1, "format": 1`, 1),
		"format":    strings.Replace(string(data), `"format": 1`, `"format": 2`, 1),
		"renamed":   strings.Replace(string(data), `"echo": {`, `"echo2": {`, 1),
		"badname":   strings.Replace(string(data), `"mem": {`, `"Mem_x": {`, 1),
	} {
		if bad == string(data) {
			t.Fatalf("%s: the edit changed nothing", name)
		}
		if _, err := ParseLock(name, []byte(bad)); fault.CodeOf(err) != fault.Integrity {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestNames: a name past 64 bytes, or one with a character clients
// refuse, is an error naming the tool and the name; two names a client
// ignoring case would confuse are refused naming both.
func TestNames(t *testing.T) {
	if _, err := PublicName("mem", strings.Repeat("x", 60)); err == nil || !strings.Contains(err.Error(), "mem__xxx") {
		t.Errorf("long name: %v", err)
	}
	if _, err := PublicName("mem", "a.b"); err == nil {
		t.Error("a dot accepted")
	}
	l := &Lock{}
	for _, n := range []string{"Read", "read"} {
		l.Set("mem", &Definition{Name: n, InputSchema: []byte(`{"type":"object"}`)})
	}
	_, err := New([]Upstream{{Name: "mem", Command: []string{"x"}}}, l, nil)
	if err == nil || !strings.Contains(err.Error(), "mem__Read") || !strings.Contains(err.Error(), "mem__read") {
		t.Errorf("case collision: %v", err)
	}
	l = &Lock{}
	l.Set("mem", &Definition{Name: strings.Repeat("y", 62), InputSchema: []byte(`{"type":"object"}`)})
	if _, err := New([]Upstream{{Name: "mem", Command: []string{"x"}}}, l, nil); err == nil || !strings.Contains(err.Error(), "yyyy") {
		t.Errorf("long approved name: %v", err)
	}
}

// TestToolsAllowList: tools = [...] offers only the tools it matches.
func TestToolsAllowList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &fixtureOptions{adjust: func(u *Upstream) { u.Tools = []string{"ec*", "pid"} }})
	var names []string
	for _, tl := range f.g.Tools() {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "echo,pid" {
		t.Errorf("offered %v", names)
	}
	s := f.session("model")
	if _, err := f.call(s, "crash", nil); fault.CodeOf(err) != fault.NotFound {
		t.Errorf("a tool left out: %v", err)
	}
}

// TestNotGranted: without upstream:NAME nothing of the upstream is
// visible, found or callable, and nothing is started.
func TestNotGranted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	c, _ := capability.New("other", []capability.Effect{capability.ToolSearch}, capability.Scope{})
	s, _ := f.rt.NewSession("other", []capability.Capability{c}, nil)
	res, _ := s.Call(context.Background(), "tool_search", json.RawMessage(`{"query":"echo"}`))
	if strings.Contains(res.Text, "hostile") || len(s.Specs()) != 1 {
		t.Errorf("search %q, specs %d", res.Text, len(s.Specs()))
	}
	_, err := s.Call(context.Background(), "hostile__echo", json.RawMessage(`{"text":"x"}`))
	wantCode(t, err, fault.Denied)
	if n := f.started(); n != 0 {
		t.Errorf("%d processes started", n)
	}
}

// TestStartFailure: a command that cannot start fails its calls with
// unavailable saying why, without hanging.
func TestStartFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	l := &Lock{}
	for _, tl := range f.g.Tools() {
		l.Set("hostile", tl.Definition)
	}
	up := f.up
	up.Command = []string{"/nonexistent/server"}
	g, err := New([]Upstream{up}, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tl, _ := g.Tool("hostile__echo")
	_, err = g.Call(context.Background(), Key{Actor: "a"}, tl, json.RawMessage(`{"text":"x"}`), 1000, nil)
	wantCode(t, err, fault.Unavailable, "cannot be started")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := g.Offered(done, Key{Actor: "a"}, tl); err == nil {
		t.Error("a tool of an upstream that cannot start is offered")
	}
}
