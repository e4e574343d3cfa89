package script

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fixedfiles"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// The test binary doubles as the script worker.
const workerEnv = "CAPKIT_SCRIPT_TEST_WORKER=1"

func TestMain(m *testing.M) {
	if os.Getenv("CAPKIT_SCRIPT_TEST_WORKER") == "1" {
		if err := ServeWorker(context.Background()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testWorker(t testing.TB) *Worker {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return &Worker{Command: []string{exe}, Env: []string{workerEnv}}
}

type echoIn struct {
	Text string `json:"text" jsonschema:"text to echo"`
	N    int    `json:"n,omitempty" jsonschema:"repeat count"`
}

type echoOut struct {
	Echo  string `json:"echo"`
	Count int    `json:"count"`
}

const notesContent = "grep for TODO in the workspace\n"

type fixture struct {
	rt         *kernel.Runtime
	audit, log *testkit.Buffer
	dir        string
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	f := &fixture{audit: &testkit.Buffer{}, log: &testkit.Buffer{}, dir: t.TempDir()}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	b := kernel.NewBuilder(&kernel.Options{
		Audit: slog.New(slog.NewJSONHandler(f.audit, nil)),
		Log:   slog.New(slog.NewJSONHandler(f.log, nil)),
	})
	must(kernel.AddTool(b, kernel.Policy{Name: "echo", MaxCalls: 1_000_000}, kernel.Meta{Effect: capability.ReadFile, Hot: true, Description: "Echoes text."},
		func(_ context.Context, _ *kernel.Call, in echoIn) (echoOut, error) {
			n := max(in.N, 1)
			out := ""
			for range n {
				out += in.Text
			}
			return echoOut{Echo: out, Count: n}, nil
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "counter", MaxCalls: 3}, kernel.Meta{Effect: capability.ReadFile, Description: "Counts."},
		func(_ context.Context, _ *kernel.Call, _ struct{}) (echoOut, error) { return echoOut{Count: 1}, nil }))
	must(kernel.AddTool(b, kernel.Policy{Name: "fail_io"}, kernel.Meta{Effect: capability.ReadFile, Description: "Fails."},
		func(_ context.Context, _ *kernel.Call, _ struct{}) (echoOut, error) {
			return echoOut{}, fault.Wrap(fault.IO, errors.New("read /srv/secret/file: EIO"), "reading /srv/secret/file failed")
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "fail_output"}, kernel.Meta{Effect: capability.ReadFile, Description: "Fails with output."},
		func(_ context.Context, _ *kernel.Call, _ struct{}) (echoOut, error) {
			return echoOut{}, fault.New(fault.Limit, "the command ran past its time limit").WithDetail(failedOutput)
		}))
	must(kernel.AddTool(b, kernel.Policy{Name: "write_thing"}, kernel.Meta{Effect: capability.WriteFile, Description: "Writes."},
		func(_ context.Context, _ *kernel.Call, _ struct{}) (echoOut, error) { return echoOut{}, nil }))

	cb, err := fixedfiles.NewBuilder(nil)
	must(err)
	p := filepath.Join(f.dir, "notes.txt")
	must(os.WriteFile(p, []byte(notesContent), 0o644))
	must(cb.InsertPath("release.notes", p))
	cat, err := cb.Build()
	must(err)
	t.Cleanup(func() { cat.Close() })
	must(fixedfiles.RegisterTools(b, &fixedfiles.ToolOptions{Catalogs: []fixedfiles.CatalogTool{{Name: "notes", Catalog: cat}}}))
	must(RegisterTools(b, &ToolOptions{Run: Options{MaxSteps: 100_000}}))
	f.rt, err = b.Build()
	must(err)
	return f
}

// session is an untrusted session granted read_file, the notes catalog
// and run_script (not write_file).
func (f *fixture) session(t testing.TB) *kernel.Session {
	t.Helper()
	c, err := capability.New("agent", []capability.Effect{capability.ReadFile, capability.CatalogRead, capability.RunScript}, capability.Scope{Resources: []string{"notes"}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := f.rt.NewSession("agent", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
