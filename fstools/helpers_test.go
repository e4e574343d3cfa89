package fstools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// allEffects are the effects of every file tool.
var allEffects = []capability.Effect{
	capability.ReadFile, capability.WriteFile, capability.EditFile, capability.MoveFile,
	capability.List, capability.Search, capability.ToolSearch,
}

// newRuntime registers the file tools with opts and builds a runtime.
func newRuntime(t testing.TB, opts *Options) *kernel.Runtime {
	t.Helper()
	b := kernel.NewBuilder(nil)
	if err := RegisterTools(b, opts); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// newSession starts a session granted effects on roots.
func newSession(t testing.TB, rt *kernel.Runtime, effects []capability.Effect, roots ...string) *kernel.Session {
	t.Helper()
	c, err := capability.New("model", effects, capability.Scope{Roots: roots})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewSession("model", []capability.Capability{c}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tempRoot is a fresh root directory with symlinks resolved (t.TempDir may
// sit under a symlinked /tmp).
func tempRoot(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// callTool calls tool with args (a value encoded as JSON) under a deadline,
// so no call can hang a test.
func callTool(t testing.TB, s *kernel.Session, tool string, args any) (*kernel.Result, error) {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.Call(ctx, tool, raw)
}

// mustCall fails the test unless the call succeeds, and returns its text.
func mustCall(t testing.TB, s *kernel.Session, tool string, args any) string {
	t.Helper()
	res, err := callTool(t, s, tool, args)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res.Text
}

// wantCode fails the test unless the call fails with code.
func wantCode(t testing.TB, s *kernel.Session, tool string, args any, code fault.Code) error {
	t.Helper()
	_, err := callTool(t, s, tool, args)
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("%s %v: code %q (%v), want %q", tool, args, got, err, code)
	}
	return err
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type obj = map[string]any
