package examples

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/kernel"
)

// library is the README's library example, between its markers: the test
// runs it, and TestReadmeLibrary checks the README shows it as it is here.
func library(ctx context.Context, dir string) (string, error) {
	// library example begins
	b := kernel.NewBuilder(nil)
	if err := tools.RegisterTools(b, &tools.ToolOptions{Events: policy.NewEvents()}); err != nil {
		return "", err
	}
	rt, err := b.Build() // frozen: nothing registers afterwards
	if err != nil {
		return "", err
	}
	c, _ := capability.New("assistant", []capability.Effect{capability.ReadFile, capability.List}, capability.Scope{Roots: []string{dir}})
	sess, _ := rt.NewSession("assistant", []capability.Capability{c}, nil)
	res, err := sess.Call(ctx, "read_file", json.RawMessage(`{"path": "hello.txt"}`))
	if err != nil {
		return "", err // a *fault.Error: fault.CodeOf(err), errors.Is(err, fault.ErrDenied)
	}
	return res.Text, nil
	// library example ends
}

func TestLibrary(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello\n"), 0o600)
	text, err := library(context.Background(), dir)
	if err != nil || !strings.Contains(text, "hello") {
		t.Fatalf("read_file = %q, %v", text, err)
	}
	if _, err := library(context.Background(), filepath.Join(dir, "missing")); fault.CodeOf(err) == "" {
		t.Errorf("a root that does not exist: %v", err)
	}
}
