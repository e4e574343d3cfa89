package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/jsonschema-go/jsonschema"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/limits"
)

type echoArgs struct {
	Text string `json:"text" jsonschema:"text to echo"`
	N    int    `json:"n,omitempty" jsonschema:"repeat count"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

func echo(_ context.Context, _ *Call, in echoArgs) (echoOut, error) {
	return echoOut{Echo: strings.Repeat(in.Text, max(in.N, 1))}, nil
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

type fixture struct {
	rt       *Runtime
	audit    *syncBuffer
	log      *syncBuffer
	block    chan struct{}
	released chan struct{}
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{audit: &syncBuffer{}, log: &syncBuffer{}, block: make(chan struct{}), released: make(chan struct{})}
	b := NewBuilder(&Options{
		Audit: slog.New(slog.NewJSONHandler(f.audit, nil)),
		Log:   slog.New(slog.NewJSONHandler(f.log, nil)),
	})
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(AddTool(b, Policy{Name: "echo", MaxCalls: 3, MaxInputBytes: 64, MaxOutputBytes: 32},
		Meta{Effect: capability.ReadFile, Hot: true, Description: "Echoes text."}, echo))
	must(AddTool(b, Policy{Name: "write_thing", MaxCalls: 10},
		Meta{Effect: capability.WriteFile, Hot: true, Description: "Writes a thing."}, echo))
	must(AddTool(b, Policy{Name: "stuck", Timeout: 50 * time.Millisecond},
		Meta{Effect: capability.ReadFile, Description: "Ignores its context and blocks."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
			<-f.block
			close(f.released)
			return echoOut{}, nil
		}))
	must(AddTool(b, Policy{Name: "io_fail"},
		Meta{Effect: capability.ReadFile, Summary: "Fails with an io error.", Description: "Fails."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
			return echoOut{}, fault.Wrap(fault.IO, errors.New("read /home/secret/file: EIO"), "reading /home/secret/file failed")
		}))
	must(AddTool(b, Policy{Name: "io_fail_output"},
		Meta{Effect: capability.ReadFile, Description: "Fails with an io error and output."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) {
			return echoOut{}, fault.Wrap(fault.IO, errors.New("read /home/secret/file: EIO"), "reading /home/secret/file failed").WithDetail("output-the-caller-needs")
		}))
	must(AddTool(b, Policy{Name: "panics"},
		Meta{Effect: capability.ReadFile, Description: "Panics."},
		func(ctx context.Context, _ *Call, _ struct{}) (echoOut, error) { panic("boom at /home/secret") }))
	must(AddTool(b, Policy{Name: "move_thing"},
		Meta{Effect: capability.MoveFile, Summary: "Move or rename a thing.", Description: "Moves."}, echo))
	rt, err := b.Build()
	must(err)
	f.rt = rt
	t.Cleanup(func() {
		select {
		case <-f.block:
		default:
			close(f.block)
		}
	})
	return f
}

func session(t *testing.T, rt *Runtime, trusted bool, effects ...capability.Effect) *Session {
	t.Helper()
	c, err := capability.New("alice", effects, capability.Scope{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewSession("alice", []capability.Capability{c}, &SessionOptions{Trusted: trusted})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func codeOf(err error) fault.Code { return fault.CodeOf(err) }

func TestCallChecks(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		tool string
		args string
		want fault.Code
	}{
		{"ok", "echo", `{"text":"hi"}`, ""},
		{"empty args object is validated", "echo", ``, fault.InvalidInput},
		{"unknown tool", "nope", `{}`, fault.NotFound},
		{"not granted", "write_thing", `{"text":"x"}`, fault.Denied},
		{"input past limit", "echo", `{"text":"` + strings.Repeat("a", 64-10) + `"}`, fault.Limit},
		{"missing required", "echo", `{}`, fault.InvalidInput},
		{"wrong type", "echo", `{"text":1}`, fault.InvalidInput},
		{"unknown member", "echo", `{"text":"a","x":1}`, fault.InvalidInput},
		{"duplicate member", "echo", `{"text":"a","text":"b"}`, fault.InvalidInput},
		{"not an object", "echo", `["text"]`, fault.InvalidInput},
		{"malformed", "echo", `{"text":`, fault.InvalidInput},
		{"output over bound", "echo", `{"text":"abcdefgh","n":4}`, fault.Limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := session(t, f.rt, false, capability.ReadFile)
			_, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
			if got := codeOf(err); got != c.want {
				t.Fatalf("code = %q (%v), want %q", got, err, c.want)
			}
		})
	}
}

func TestInputBoundEdge(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	at := `{"text":"` + strings.Repeat("a", 64-11) + `"}`
	if _, err := s.Call(context.Background(), "echo", json.RawMessage(at)); codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "output") {
		t.Fatalf("64 bytes must pass the input bound (and fail the output bound): %v", err)
	}
	past := `{"text":"` + strings.Repeat("a", 64-11) + `" }`
	if _, err := s.Call(context.Background(), "echo", json.RawMessage(past)); codeOf(err) != fault.Limit {
		t.Fatalf("65 bytes: %v", err)
	}
}

func TestOutputBoundEdge(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	// {"echo":"…"} is 11 bytes of JSON plus the text; text and structured
	// content both count: 2*(11+k)... text equals the JSON here.
	k := 32/2 - 11
	res, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"`+strings.Repeat("x", k)+`"}`))
	if err != nil || res.Size() != 32 {
		t.Fatalf("at the bound: %v size %d", err, res.Size())
	}
	_, err = s.Call(context.Background(), "echo", json.RawMessage(`{"text":"`+strings.Repeat("x", k+1)+`"}`))
	if codeOf(err) != fault.Limit {
		t.Fatalf("one past: %v", err)
	}
}

func TestCallBudget(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	for i := range 3 {
		if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`))
	if codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "budget of 3") {
		t.Fatalf("4th call: %v", err)
	}
	other := session(t, f.rt, false, capability.ReadFile)
	if _, err := other.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); err != nil {
		t.Fatalf("budgets are per session: %v", err)
	}
}

func TestTimeoutDoesNotHang(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	done := make(chan error, 1)
	go func() {
		_, err := s.Call(context.Background(), "stuck", json.RawMessage(`{}`))
		done <- err
	}()
	select {
	case err := <-done:
		if codeOf(err) != fault.Limit {
			t.Fatalf("code %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("call hung past its deadline")
	}
	// The runtime stays usable while the stuck handler's worker is held.
	if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); err != nil {
		t.Fatalf("call after a stuck handler: %v", err)
	}
	close(f.block)
	<-f.released
}

func TestCancellation(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.Call(ctx, "stuck", json.RawMessage(`{}`))
	if codeOf(err) != fault.Unavailable {
		t.Fatalf("canceled call: %v", err)
	}
}

func TestUntrustedGetsGenericMessages(t *testing.T) {
	f := newFixture(t)
	for _, tool := range []string{"io_fail", "panics"} {
		t.Run(tool, func(t *testing.T) {
			s := session(t, f.rt, false, capability.ReadFile)
			_, err := s.Call(context.Background(), tool, json.RawMessage(`{}`))
			if err == nil || strings.Contains(err.Error(), "secret") {
				t.Fatalf("untrusted caller saw detail: %v", err)
			}
			if !strings.Contains(f.log.String(), "secret") {
				t.Fatal("the host log must keep the detail")
			}
			trusted := session(t, f.rt, true, capability.ReadFile)
			_, err = trusted.Call(context.Background(), tool, json.RawMessage(`{}`))
			if err == nil || !strings.Contains(err.Error(), "secret") {
				t.Fatalf("trusted caller lost detail: %v", err)
			}
		})
	}
}

// TestDetailKept: a failure's detail (content of the call, such as a
// command's output) reaches an untrusted caller even where the message is
// made generic, and neither the host's log nor the audit event holds it.
func TestDetailKept(t *testing.T) {
	f := newFixture(t)
	for _, trusted := range []bool{false, true} {
		_, err := session(t, f.rt, trusted, capability.ReadFile).Call(context.Background(), "io_fail_output", json.RawMessage(`{}`))
		fe := fault.As(err)
		if fe.Code != fault.IO || fe.Detail != "output-the-caller-needs" || strings.Contains(fe.Error(), "secret") == !trusted {
			t.Fatalf("trusted %v: %v, detail %q", trusted, err, fe.Detail)
		}
	}
	if strings.Contains(f.log.String(), "output-the-caller-needs") || strings.Contains(f.audit.String(), "output-the-caller-needs") {
		t.Fatalf("the detail was logged or audited:\n%s\n%s", f.log.String(), f.audit.String())
	}
	if !strings.Contains(f.audit.String(), `"tool":"io_fail_output"`) {
		t.Fatalf("no audit event of the call:\n%s", f.audit.String())
	}
}

func TestAuditEvents(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile)
	const marker = "MRK77"
	s.Call(context.Background(), "echo", json.RawMessage(`{"text":"`+marker+`"}`))
	s.Call(context.Background(), "write_thing", json.RawMessage(`{"text":"x"}`))
	s.Call(context.Background(), "no_such_"+marker, json.RawMessage(`{}`))
	lines := strings.Split(strings.TrimSpace(f.audit.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want 3 audit lines, got %d: %s", len(lines), f.audit.String())
	}
	if strings.Contains(f.audit.String(), marker) {
		t.Fatal("audit carries content or caller text")
	}
	var ev struct {
		Actor, Tool, Outcome string
		InBytes              int   `json:"in_bytes"`
		OutBytes             int64 `json:"out_bytes"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Actor != "alice" || ev.Tool != "echo" || ev.Outcome != "ok" || ev.InBytes == 0 || ev.OutBytes == 0 {
		t.Errorf("event = %+v", ev)
	}
	json.Unmarshal([]byte(lines[1]), &ev)
	if ev.Outcome != "denied" || ev.OutBytes != 0 {
		t.Errorf("denied event = %+v", ev)
	}
}

func TestToolSearchActivates(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.ReadFile, capability.MoveFile, capability.ToolSearch)
	names := func() []string {
		var out []string
		for _, e := range s.Specs() {
			out = append(out, e.Name)
		}
		return out
	}
	if got := strings.Join(names(), ","); got != "echo,tool_search" {
		t.Fatalf("initial specs %s", got)
	}
	changed := 0
	s.OnToolsChanged(func() { changed++ })
	res, err := s.Call(context.Background(), "tool_search", json.RawMessage(`{"query":"move rename","limit":50}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Text, "tools now available:\nmove_thing") || changed != 1 {
		t.Fatalf("search result %q, changed %d", res.Text, changed)
	}
	if !strings.Contains(res.Text, "limit 50 is outside 1..12; 12 was used") {
		t.Errorf("the clamped limit is not reported: %q", res.Text)
	}
	if got := strings.Join(names(), ","); got != "echo,move_thing,tool_search" {
		t.Fatalf("after search %s", got)
	}
	res, _ = s.Call(context.Background(), "tool_search", json.RawMessage(`{"query":"move"}`))
	if changed != 1 {
		t.Fatal("re-activation must not notify")
	}
	// A tool listed already is not "now available".
	if strings.Contains(res.Text, "now available") || !strings.Contains(res.Text, "already in your tool list:\nmove_thing") {
		t.Errorf("second search: %q", res.Text)
	}
	if !strings.Contains(string(res.Structured), `"activated":[]`) || !strings.Contains(string(res.Structured), `"new":false`) {
		t.Errorf("second search structured: %s", res.Structured)
	}
	for _, c := range []struct {
		limit int
		note  string
	}{{0, ""}, {1, ""}, {12, ""}, {13, "limit 13 is outside 1..12; 12 was used"}, {-1, "limit -1 is outside 1..12; 1 was used"}} {
		res, err := s.Call(context.Background(), "tool_search", json.RawMessage(fmt.Sprintf(`{"query":"move","limit":%d}`, c.limit)))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(res.Text, "is outside"); got != (c.note != "") || c.note != "" && !strings.Contains(res.Text, c.note) {
			t.Errorf("limit %d: %q", c.limit, res.Text)
		}
	}
	// Activation never grants: write_thing is not held.
	if added := s.Activate("write_thing", "nope"); len(added) != 0 {
		t.Fatalf("activated without authority: %v", added)
	}
}

func TestSpecsWithoutToolSearchListEverythingGranted(t *testing.T) {
	f := newFixture(t)
	s := session(t, f.rt, false, capability.MoveFile)
	if specs := s.Specs(); len(specs) != 1 || specs[0].Name != "move_thing" {
		t.Fatalf("specs %v", specs)
	}
}

func TestBuilderRules(t *testing.T) {
	desc := Meta{Effect: capability.ReadFile, Description: "d"}
	cases := []struct {
		name   string
		policy Policy
		meta   Meta
	}{
		{"bad name", Policy{Name: "Bad-Name"}, desc},
		{"no description", Policy{Name: "x"}, Meta{Effect: capability.ReadFile}},
		{"unknown effect", Policy{Name: "x"}, Meta{Effect: "fly", Description: "d"}},
		{"output over hard limit", Policy{Name: "x", MaxOutputBytes: limits.HardMaxOutputBytes + 1}, desc},
		{"negative calls", Policy{Name: "x", MaxCalls: -1}, desc},
		{"timeout over hard limit", Policy{Name: "x", Timeout: limits.HardMaxTimeout + 1}, desc},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := AddTool(NewBuilder(nil), c.policy, c.meta, echo); err == nil {
				t.Fatal("registered")
			}
		})
	}
	b := NewBuilder(nil)
	if err := AddTool(b, Policy{Name: "x"}, desc, echo); err != nil {
		t.Fatal(err)
	}
	if err := AddTool(b, Policy{Name: "x"}, desc, echo); err == nil {
		t.Fatal("duplicate registered")
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := AddTool(b, Policy{Name: "y"}, desc, echo); !errors.Is(err, ErrBuilt) {
		t.Fatalf("register after build: %v", err)
	}
	if _, err := b.Build(); !errors.Is(err, ErrBuilt) {
		t.Fatal("second build")
	}
	p, _ := rt.Policy("x")
	if p.MaxCalls != limits.DefaultMaxCalls || p.Timeout != limits.DefaultTimeout || p.MaxOutputBytes != limits.DefaultMaxOutputBytes {
		t.Errorf("defaults not applied: %+v", p)
	}
	bob, _ := capability.New("bob", []capability.Effect{capability.ReadFile}, capability.Scope{})
	if _, err := rt.NewSession("alice", []capability.Capability{bob}, nil); err == nil {
		t.Fatal("a capability issued to bob was held by alice")
	}
}

func TestConcurrentCallsRespectBudget(t *testing.T) {
	b := NewBuilder(nil)
	AddTool(b, Policy{Name: "echo", MaxCalls: 50}, Meta{Effect: capability.ReadFile, Description: "d"}, echo)
	rt, _ := b.Build()
	s := session(t, rt, false, capability.ReadFile)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text":"a"}`)); err == nil {
				mu.Lock()
				ok++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ok != 50 {
		t.Fatalf("%d calls admitted, budget 50", ok)
	}
}

// TestNarrowRoots: narrowing takes roots away and a later narrowing gives
// back at most what the session was started with.
func TestNarrowRoots(t *testing.T) {
	f := newFixture(t)
	c, err := capability.New("alice", []capability.Effect{capability.ReadFile}, capability.Scope{Roots: []string{"/p", "/d"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.rt.NewSession("alice", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.NarrowRoots([]string{"/p/sub"})
	if got := s.Capabilities().Roots(capability.ReadFile); !slices.Equal(got, []string{"/p/sub"}) {
		t.Fatalf("narrowed roots %v", got)
	}
	s.NarrowRoots([]string{"/"})
	if got := s.Capabilities().Roots(capability.ReadFile); !slices.Equal(got, []string{"/p", "/d"}) {
		t.Fatalf("re-narrowed roots %v, want the granted ones and no more", got)
	}
	if !s.Capabilities().Grants(capability.ReadFile) {
		t.Fatal("narrowing took an effect")
	}
}

// TestRawJSONSchemas: a typed tool's encoded JSON fields (in and out) take
// any JSON value; inferred as byte slices they refused every object.
func TestRawJSONSchemas(t *testing.T) {
	type io struct {
		V jsontext.Value  `json:"v"`
		R json.RawMessage `json:"r"`
	}
	b := NewBuilder(nil)
	err := AddTool(b, Policy{Name: "raw"}, Meta{Effect: capability.Parse, Description: "Raw."},
		func(_ context.Context, _ *Call, in io) (io, error) { return in, nil })
	if err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := rt.Catalog().Lookup("raw")
	in, out, err := e.SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range []json.RawMessage{in, out} {
		if strings.Contains(string(schema), `"array"`) || strings.Contains(string(schema), `"null"`) {
			t.Errorf("raw JSON fields are typed: %s", schema)
		}
	}
	s := session(t, rt, false, capability.Parse)
	if _, err := s.Call(context.Background(), "raw", json.RawMessage(`{"v":{"a":1},"r":"x"}`)); err != nil {
		t.Fatalf("an object for a raw field: %v", err)
	}
}

// A tool whose schema does not resolve is the tool's defect: its call fails
// as internal (not as the caller's invalid_input) and the handler never
// runs; the other tools are unaffected.
func TestUnresolvableSchemaFailsTheCall(t *testing.T) {
	b := NewBuilder(&Options{DisableToolSearch: true})
	ran := false
	broken := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{"x": {Type: "string", Pattern: "("}}}
	err := b.Register(Policy{Name: "broken"}, Meta{Effect: capability.Parse, Description: "Broken."}, broken, nil,
		func(context.Context, *Call) (*Result, error) { ran = true; return &Result{Text: "ran"}, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := AddTool(b, Policy{Name: "echo"}, Meta{Effect: capability.Parse, Description: "Echo."}, echo); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Catalog().Check(); !errors.Is(err, catalog.ErrSchema) {
		t.Fatalf("Check: %v", err)
	}
	s := session(t, rt, true, capability.Parse)
	_, err = s.Call(context.Background(), "broken", json.RawMessage(`{"x": "a"}`))
	if codeOf(err) != fault.Internal || !errors.Is(err, catalog.ErrSchema) || ran {
		t.Fatalf("call of a tool with a broken schema: %v (handler ran: %v)", err, ran)
	}
	if _, err := s.Call(context.Background(), "echo", json.RawMessage(`{"text": "a"}`)); err != nil {
		t.Fatalf("another tool: %v", err)
	}
}

// A typed tool's schemas are inferred on first use: arguments that are not
// a struct are refused at registration, a type that cannot be inferred
// fails the tool's calls (internal) and Check.
func TestInferredSchemaFailures(t *testing.T) {
	desc := Meta{Effect: capability.Parse, Description: "D."}
	err := AddTool(NewBuilder(nil), Policy{Name: "str"}, desc,
		func(_ context.Context, _ *Call, in string) (echoOut, error) { return echoOut{}, nil })
	if err == nil || !strings.Contains(err.Error(), "not a struct") {
		t.Fatalf("string arguments: %v", err)
	}
	type chanIn struct {
		C chan int `json:"c"`
	}
	b := NewBuilder(&Options{DisableToolSearch: true})
	if err := AddTool(b, Policy{Name: "chan"}, desc,
		func(_ context.Context, _ *Call, in chanIn) (echoOut, error) { return echoOut{}, nil }); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Catalog().Check(); !errors.Is(err, catalog.ErrSchema) {
		t.Fatalf("Check: %v", err)
	}
	s := session(t, rt, true, capability.Parse)
	if _, err := s.Call(context.Background(), "chan", json.RawMessage(`{}`)); codeOf(err) != fault.Internal {
		t.Fatalf("call: %v", err)
	}
}

// TestCallerDeadlineNamed: a call ended by its caller's deadline, shorter
// than the tool's limit, says so rather than naming the tool's limit.
func TestCallerDeadlineNamed(t *testing.T) {
	g := newGate(t, 1, limits.HardMaxTimeout)
	s := session(t, g.rt, false, capability.ReadFile)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := s.Call(ctx, "gate", json.RawMessage(`{}`))
	if codeOf(err) != fault.Limit || !strings.Contains(err.Error(), "the caller's deadline passed after") || !strings.Contains(err.Error(), "own time limit is 10m0s") {
		t.Fatalf("call past its caller's deadline: %v", err)
	}
	g.release <- struct{}{}
	// A deadline already passed says so, not a negative time.
	g2 := newGate(t, 1, limits.HardMaxTimeout)
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	if _, err := session(t, g2.rt, false, capability.ReadFile).Call(past, "gate", json.RawMessage(`{}`)); !strings.Contains(err.Error(), "passed after 0s") {
		t.Errorf("call past an already passed deadline: %v", err)
	}
}
