package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// allEffects are the effects of every file tool.
var allEffects = []capability.Effect{
	capability.ReadFile, capability.WriteFile, capability.EditFile, capability.MoveFile,
	capability.List, capability.Search, capability.ToolSearch,
}

// newRuntime registers the file tools with opts and builds a runtime.
// newRuntime registers the tools with opts; without Events (and without
// DisableGate) it attaches the file policy, as a host does.
func newRuntime(t testing.TB, opts *ToolOptions) *kernel.Runtime {
	t.Helper()
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	if o.Events == nil && !o.DisableGate {
		o.Events = policy.NewEvents()
	}
	return testkit.Runtime(t, RegisterTools, &o)
}

// newRuntimePolicies is newRuntime with the host's policy overrides: each
// tool named in policies gets that policy (zero fields mean the kernel's
// defaults), as kernel.Options.PolicyOverride applies it.
func newRuntimePolicies(t testing.TB, opts *ToolOptions, policies map[string]kernel.Policy) *kernel.Runtime {
	t.Helper()
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	if o.Events == nil && !o.DisableGate {
		o.Events = policy.NewEvents()
	}
	b := kernel.NewBuilder(&kernel.Options{PolicyOverride: func(p kernel.Policy) kernel.Policy {
		if q, ok := policies[p.Name]; ok {
			q.Name = p.Name
			return q
		}
		return p
	}})
	if err := RegisterTools(b, &o); err != nil {
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
	return testkit.Session(t, rt, testkit.Grant(t, roots, effects...))
}

// mustCall fails the test unless the call succeeds, and returns its text.
func mustCall(t testing.TB, s *kernel.Session, tool string, args any) string {
	t.Helper()
	res, err := testkit.Call(t, s, tool, args)
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res.Text
}

// wantCode fails the test unless the call fails with code.
func wantCode(t testing.TB, s *kernel.Session, tool string, args any, code fault.Code) error {
	t.Helper()
	_, err := testkit.Call(t, s, tool, args)
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

// rootTarget is the target of root itself, closed when the test ends.
func rootTarget(tb testing.TB, root string) target {
	tb.Helper()
	t, err := scope.In([]string{root}, capability.Protected{}).Resolve(".")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { t.Close() })
	return target{Target: t, root: t.Root(), name: t.Name(), display: t.Display()}
}
