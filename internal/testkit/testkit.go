// Package testkit holds the helpers capkit's tests share: a runtime and
// session for a capability package's tools, a tool call with a deadline,
// an in-memory toolkit.FileReader, a goroutine-safe log buffer, a digest of a
// directory tree, the crash tests' child process and the audit records of
// a mix of calls (CallRecord). It is imported only by _test.go files.
//
// Packages that testkit itself imports (kernel, capability, fault, fs and
// what they import) cannot use it from their own in-package tests.
package testkit

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/kernel"
)

// Actor is the actor Grant issues capabilities to and Session starts
// sessions for.
const Actor = "model"

// CallTimeout bounds each Call, so a tool that hangs fails its test
// instead of stalling the run.
const CallTimeout = 30 * time.Second

// Runtime registers tools with register(b, opts) on a builder with the
// kernel's default options and builds the runtime, failing the test on
// error. register is a capability package's RegisterTools.
func Runtime[O any](t testing.TB, register func(*kernel.Builder, O) error, opts O) *kernel.Runtime {
	t.Helper()
	return build(t, &kernel.Options{}, register, opts)
}

// build registers tools with register(b, opts) on a builder with kopts
// and builds the runtime, failing the test on error. Every result is
// checked against its tool's output schema (kernel.Options.CheckOutput).
func build[O any](t testing.TB, kopts *kernel.Options, register func(*kernel.Builder, O) error, opts O) *kernel.Runtime {
	t.Helper()
	kopts.CheckOutput = true
	b := kernel.NewBuilder(kopts)
	if err := register(b, opts); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// Grant returns a capability issued to Actor granting effects on roots.
func Grant(t testing.TB, roots []string, effects ...capability.Effect) capability.Capability {
	t.Helper()
	c, err := capability.New(Actor, effects, capability.Scope{Roots: roots})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Session starts an untrusted session of Actor on rt holding caps.
func Session(t testing.TB, rt *kernel.Runtime, caps ...capability.Capability) *kernel.Session {
	t.Helper()
	s, err := rt.NewSession(Actor, caps, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ToolSession is how a capability package's tool test begins: its tools
// registered with register(b, opts) on a runtime of their own, and an
// untrusted session of Actor granted effects on roots.
func ToolSession[O any](t testing.TB, register func(*kernel.Builder, O) error, opts O, roots []string, effects ...capability.Effect) *kernel.Session {
	t.Helper()
	return Session(t, Runtime(t, register, opts), Grant(t, roots, effects...))
}

// ToolSessionBound is ToolSession with every tool's output bounded by max
// bytes (RuntimeBound).
func ToolSessionBound[O any](t testing.TB, register func(*kernel.Builder, O) error, opts O, max int64, roots []string, effects ...capability.Effect) *kernel.Session {
	t.Helper()
	return Session(t, RuntimeBound(t, register, opts, max), Grant(t, roots, effects...))
}

// Call calls tool on s with args under CallTimeout. args is sent as is
// when it is a string or json.RawMessage, and encoded as JSON otherwise.
func Call(t testing.TB, s *kernel.Session, tool string, args any) (*kernel.Result, error) {
	t.Helper()
	var raw json.RawMessage
	switch a := args.(type) {
	case string:
		raw = json.RawMessage(a)
	case json.RawMessage:
		raw = a
	default:
		var err error
		if raw, err = json.Marshal(args); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return s.Call(ctx, tool, raw)
}

// EscapedArgs returns tool arguments of exactly size bytes: "{" and
// fields (members ending in a comma, or ""), then a "text" member of n '<'
// characters each escaped as \u003c (six bytes for one: the worst case an
// input bound must allow for), then padding whitespace and "}". It fails
// the test if the arguments exceed size before padding.
func EscapedArgs(t testing.TB, fields string, n, size int) json.RawMessage {
	t.Helper()
	var b strings.Builder
	b.WriteString("{" + fields + `"text":"`)
	b.WriteString(strings.Repeat(`\u003c`, n))
	b.WriteString(`"`)
	pad := size - b.Len() - 1
	if pad < 0 {
		t.Fatalf("arguments exceed %d bytes before padding", size)
	}
	b.WriteString(strings.Repeat(" ", pad))
	b.WriteString("}")
	return json.RawMessage(b.String())
}
