package script

import (
	"context"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// modes runs a test in process and in a worker process.
func modes(t *testing.T, f func(t *testing.T, w *Worker)) {
	t.Run("in-process", func(t *testing.T) { f(t, nil) })
	t.Run("worker", func(t *testing.T) { f(t, testWorker(t)) })
}

func TestRunResults(t *testing.T) {
	cases := []struct {
		name, src, want string
		calls           int
		opts            Options
	}{
		{"no result is null", "x = 1", "null", 0, Options{}},
		{"dict argument, structured result", `result = tool.call("echo", {"text": "hi", "n": 2})`, `{"echo":"hihi","count":2}`, 1, Options{}},
		{"text result", `result = tool.call("echo", {"text": "hi"}, text=True)`, `"{\"echo\":\"hi\",\"count\":1}"`, 1, Options{}},
		{"string fills the one required field", `result = tool.call("notes", "release.notes")`, `"grep for TODO in the workspace\n"`, 1, Options{}},
		{"string fills echo's text (its one required field)", `result = tool.call("echo", "hi")["echo"]`, `"hi"`, 1, Options{}},
		{"result of json and math", `result = [json.decode('{"a": [1, 2.5]}'), math.floor(2.7), None, True]`, `[{"a":[1,2.5]},2,null,true]`, 0, Options{}},
		{"big ints survive", `result = tool.call("echo", {"text": "x", "n": 1})["count"] * 12345678901234567890`, `12345678901234567890`, 1, Options{}},
		{"functions and loops", "def f(n):\n  return [i * i for i in range(n)]\nresult = f(4)\nfor i in range(3):\n  result.append(i)\n", `[0,1,4,9,0,1,2]`, 0, Options{}},
		{"time when granted", "t = time.now()\nresult = t.year > 2000", `true`, 0, Options{AllowTime: true}},
	}
	modes(t, func(t *testing.T, w *Worker) {
		f := newFixture(t)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				o := c.opts
				o.Worker = w
				res, err := Run(context.Background(), f.session(t), []byte(c.src), &o)
				if err != nil {
					t.Fatal(err)
				}
				if string(res.Value) != c.want || res.Calls != c.calls {
					t.Fatalf("value %s calls %d, want %s calls %d", res.Value, res.Calls, c.want, c.calls)
				}
				if res.Steps == 0 {
					t.Fatal("no steps counted")
				}
			})
		}
	})
}

// failedOutput is the detail fail_output's failure carries.
const failedOutput = "--- stdout ---\nprinted before the deadline\n"

// TestToolFailureDetail: a script whose tool.call failed with content
// (a command's output) fails with that content as its detail, in and out
// of the worker, beside the call's code and message.
func TestToolFailureDetail(t *testing.T) {
	modes(t, func(t *testing.T, w *Worker) {
		f := newFixture(t)
		_, err := Run(context.Background(), f.session(t), []byte("x = 1\ntool.call(\"fail_output\")"), &Options{Worker: w})
		fe, ok := err.(*fault.Error)
		if !ok || fe.Code != fault.Limit || fe.Detail != failedOutput || !strings.Contains(fe.Message, `tool.call("fail_output") failed: limit: the command ran past its time limit`) {
			t.Fatalf("got %T %v, detail %q", err, err, fe.Detail)
		}
	})
}

func TestRunFailures(t *testing.T) {
	cases := []struct {
		name, src string
		code      fault.Code
		contains  string
		opts      Options
	}{
		{"unknown tool", `tool.call("nope", {})`, fault.NotFound, `unknown tool "nope"`, Options{}},
		{"tool not granted", `tool.call("write_thing", {})`, fault.Denied, "not granted", Options{}},
		{"io failure is generic", `tool.call("fail_io")`, fault.IO, "i/o failure", Options{}},
		{"unknown catalog id", `tool.call("notes", "missing.id")`, fault.NotFound, "no readable entry", Options{}},
		{"string for a tool without one string field", `tool.call("counter", "hi")`, fault.InvalidInput, "want object, got string", Options{}},
		{"invalid arguments", `tool.call("echo", {"text": 1})`, fault.InvalidInput, "echo", Options{}},
		{"argument without JSON form", `tool.call("echo", {"text": set([1])})`, fault.InvalidInput, "set", Options{}},
		{"scripts cannot start scripts", `tool.call("run_script", {"source": "x = 1"})`, fault.Denied, "cannot call run_script", Options{}},
		{"load refused", `load("other.star", "x")`, fault.InvalidInput, "load is not available", Options{}},
		{"no host environment", `result = os.environ`, fault.InvalidInput, "undefined: os", Options{}},
		{"no clock unless granted", `result = time.now()`, fault.InvalidInput, "undefined: time", Options{}},
		{"syntax error", `result = (`, fault.InvalidInput, "syntax error", Options{}},
		{"runtime error", "x = {}\nresult = x['k']", fault.InvalidInput, "script.star:2", Options{}},
		{"recursion refused", "def f(n):\n  return f(n)\nf(1)", fault.InvalidInput, "recursive", Options{}},
		{"budget spent", "for i in range(10):\n  tool.call('counter')", fault.Limit, "call budget of 3", Options{}},
		{"endless loop, steps", "while True:\n  pass", fault.Limit, "step limit of 100000", Options{MaxSteps: 100_000}},
		{"endless loop, time", "while True:\n  pass", fault.Limit, "time limit of 200ms", Options{Timeout: 200 * time.Millisecond, MaxSteps: limits.ScriptHardSteps}},
		{"result over its bound", `result = "x" * 2000`, fault.Limit, "script result bytes", Options{MaxResultBytes: 1000}},
		{"shared result over its bound", "a = ['x' * 1000] * 1000\nb = [a] * 1000\nresult = [b] * 1000", fault.Limit, "script result bytes", Options{}},
		{"result that contains itself", "a = []\na.append(a)\nresult = a", fault.Limit, "nested deeper", Options{}},
		{"result without JSON form", `result = lambda: 1`, fault.InvalidInput, "function", Options{}},
		{"print bound", "for i in range(100000):\n  print('x' * 100)", fault.Limit, "print bytes", Options{}},
		{"memory, growing", "l = []\nwhile True:\n  l.append('x' * 100000)", fault.Limit, "memory limit", Options{MaxMemoryBytes: 64 << 20}},
	}
	modes(t, func(t *testing.T, w *Worker) {
		f := newFixture(t)
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				o := c.opts
				o.Worker = w
				start := time.Now()
				_, err := Run(context.Background(), f.session(t), []byte(c.src), &o)
				if err == nil {
					t.Fatal("script succeeded")
				}
				fe, ok := err.(*fault.Error)
				if !ok || fe.Code != c.code || !strings.Contains(fe.Message, c.contains) {
					t.Fatalf("got %T %v, want %s containing %q", err, err, c.code, c.contains)
				}
				for _, leak := range []string{"/srv/secret", "EIO", f.dir} {
					if strings.Contains(err.Error(), leak) {
						t.Fatalf("caller sees %q: %v", leak, err)
					}
				}
				if d := time.Since(start); d > 20*time.Second {
					t.Fatalf("took %v", d)
				}
			})
		}
		// The runtime stays usable after every failure above.
		res, err := Run(context.Background(), f.session(t), []byte(`result = tool.call("echo", {"text": "ok"})["echo"]`), &Options{Worker: w})
		if err != nil || string(res.Value) != `"ok"` {
			t.Fatalf("after failures: %s %v", res.Value, err)
		}
	})
}

// TestWorkerMemoryOneShot: one operation that allocates far past the
// budget at once ends the worker with limit, not the host.
func TestWorkerMemoryOneShot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the worker bounds its address space on Linux only")
	}
	f := newFixture(t)
	for _, src := range []string{
		`x = "a" * (1 << 29)`,
		"x = 'ab'\nwhile True:\n  x = x + x",
		`x = [None] * (1 << 28)`,
	} {
		_, err := Run(context.Background(), f.session(t), []byte(src), &Options{Worker: testWorker(t), MaxMemoryBytes: 64 << 20})
		if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "memory limit") {
			t.Fatalf("%q: %v", src, err)
		}
	}
}

func TestWorkerKilledWhenStuck(t *testing.T) {
	// A built-in that loops in Go ignores cancellation; the worker is
	// killed after the grace period.
	f := newFixture(t)
	start := time.Now()
	_, err := Run(context.Background(), f.session(t), []byte(`x = max(range(1 << 62))`), &Options{Worker: testWorker(t), Timeout: 100 * time.Millisecond})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "time limit") {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 100*time.Millisecond+limits.ScriptWorkerGrace+5*time.Second {
		t.Fatalf("took %v", d)
	}
}

func TestRunCanceled(t *testing.T) {
	modes(t, func(t *testing.T, w *Worker) {
		f := newFixture(t)
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := Run(ctx, f.session(t), []byte("while True:\n  pass"), &Options{Worker: w, MaxSteps: limits.ScriptHardSteps})
		// The caller's deadline is not the script's: canceled, not limit.
		if c := fault.CodeOf(err); c != fault.Unavailable && c != fault.Limit {
			t.Fatal(err)
		}
	})
}

func TestRunAuditsEveryCall(t *testing.T) {
	modes(t, func(t *testing.T, w *Worker) {
		f := newFixture(t)
		src := "for i in range(5):\n  tool.call('echo', {'text': 'zq-secret-%d' % i})\ntool.call('notes', 'release.notes')"
		res, err := Run(context.Background(), f.session(t), []byte(src), &Options{Worker: w})
		if err != nil || res.Calls != 6 {
			t.Fatal(res, err)
		}
		audit := f.audit.String()
		if n := strings.Count(audit, `"msg":"call"`); n != 6 {
			t.Fatalf("%d audit lines: %s", n, audit)
		}
		if strings.Contains(audit, "zq-secret") || strings.Contains(audit, "release.notes") {
			t.Fatalf("audit carries arguments: %s", audit)
		}
	})
}

func TestPrint(t *testing.T) {
	modes(t, func(t *testing.T, w *Worker) {
		f := newFixture(t)
		var got []string
		_, err := Run(context.Background(), f.session(t), []byte("print('a')\nprint('b', 1)"), &Options{Worker: w, Print: func(s string) { got = append(got, s) }})
		if err != nil || strings.Join(got, "|") != "a|b 1" {
			t.Fatal(got, err)
		}
	})
}

func TestOptionsBounds(t *testing.T) {
	f := newFixture(t)
	for _, o := range []Options{
		{MaxSteps: limits.ScriptHardSteps + 1},
		{Timeout: limits.ScriptHardTimeout + 1},
		{MaxResultBytes: limits.ScriptHardResultBytes + 1},
		{MaxMemoryBytes: limits.ScriptHardMemoryBytes + 1},
		{Timeout: -1},
		{Worker: &Worker{}},
	} {
		if _, err := Run(context.Background(), f.session(t), []byte("x = 1"), &o); fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("%+v: %v", o, err)
		}
	}
	// At the hard limits: accepted.
	o := Options{MaxSteps: limits.ScriptHardSteps, Timeout: limits.ScriptHardTimeout, MaxResultBytes: limits.ScriptHardResultBytes, MaxMemoryBytes: limits.ScriptHardMemoryBytes}
	if _, err := Run(context.Background(), f.session(t), []byte("x = 1"), &o); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, limits.ScriptMaxSourceBytes+1)
	if _, err := Run(context.Background(), f.session(t), big, nil); fault.CodeOf(err) != fault.Limit {
		t.Fatal(err)
	}
}

func TestRunScriptTool(t *testing.T) {
	f := newFixture(t)
	s := f.session(t)
	args, _ := json.Marshal(map[string]string{"source": `result = {"notes": tool.call("notes", "release.notes")}`})
	res, err := s.Call(context.Background(), ToolName, args)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text != `{"notes":"grep for TODO in the workspace\n"}` {
		t.Fatalf("%q", res.Text)
	}
	args, _ = json.Marshal(map[string]string{"source": "while True:\n  pass"})
	if _, err := s.Call(context.Background(), ToolName, args); fault.CodeOf(err) != fault.Limit {
		t.Fatal(err)
	}
}
