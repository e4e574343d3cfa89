package zipfile

import (
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func toolSession(t *testing.T, grants map[capability.Effect]string) *kernel.Session {
	t.Helper()
	var caps []capability.Capability
	for e, root := range grants {
		caps = append(caps, testkit.Grant(t, []string{root}, e))
	}
	return testkit.Session(t, testkit.Runtime(t, RegisterTools, nil), caps...)
}

func call(t *testing.T, s *kernel.Session, tool string, args any) (map[string]any, error) {
	t.Helper()
	res, err := testkit.Call(t, s, tool, args)
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		t.Fatal(err)
	}
	return out, nil
}

func TestTools(t *testing.T) {
	work, other := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(work, "src", "sub"), 0o700)
	os.WriteFile(filepath.Join(work, "src", "a.txt"), []byte("alpha"), 0o600)
	os.WriteFile(filepath.Join(work, "src", "sub", "b.txt"), []byte("beta"), 0o600)
	os.WriteFile(filepath.Join(other, "secret"), []byte("s"), 0o600)
	os.Symlink(other, filepath.Join(work, "escape"))
	if err := syscall.Mkfifo(filepath.Join(work, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := toolSession(t, map[capability.Effect]string{capability.ArchiveWrite: work, capability.ArchiveRead: work})

	out, err := call(t, s, "zip_create", map[string]any{"archive": "out.zip", "dir": "src", "files": []string{"a.txt", "sub/b.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	expect := map[string]string{}
	for _, m := range out["members"].([]any) {
		m := m.(map[string]any)
		expect[m["name"].(string)] = m["sha256"].(string)
	}
	if len(expect) != 2 {
		t.Fatalf("members %v", out)
	}
	if _, err := call(t, s, "zip_list", map[string]any{"archive": "out.zip"}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, s, "zip_verify", map[string]any{"archive": filepath.Join(work, "out.zip"), "expect": expect}); err != nil {
		t.Fatal(err)
	}
	if _, err := call(t, s, "zip_extract", map[string]any{"archive": "out.zip", "destination": "x", "expect": expect}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(work, "x", "sub", "b.txt")); string(b) != "beta" {
		t.Fatalf("extracted %q", b)
	}

	cases := []struct {
		name string
		tool string
		args map[string]any
		code fault.Code
	}{
		{"archive outside roots", "zip_list", map[string]any{"archive": filepath.Join(other, "a.zip")}, fault.Denied},
		{"dest climbing out", "zip_extract", map[string]any{"archive": "out.zip", "destination": "../y", "expect": expect}, fault.Denied},
		{"dest through a symlink out of the root", "zip_extract", map[string]any{"archive": "out.zip", "destination": "escape/y", "expect": expect}, fault.Denied},
		{"source through a symlink out of the root", "zip_create", map[string]any{"archive": "o2.zip", "dir": "escape", "files": []string{"secret"}}, fault.Denied},
		// A FIFO as the source directory: refused without blocking on its
		// open, as what it is (it was not_found, "an element of its path
		// is not a directory", before the scope opened the directory).
		{"source dir is a FIFO", "zip_create", map[string]any{"archive": "o4.zip", "dir": "fifo", "files": []string{"a.txt"}}, fault.InvalidInput},
		{"dest parent is a FIFO", "zip_extract", map[string]any{"archive": "out.zip", "destination": "fifo/y", "expect": expect}, fault.NotFound},
		{"unsafe member name", "zip_create", map[string]any{"archive": "o3.zip", "dir": "src", "files": []string{"../out.zip"}}, fault.InvalidInput},
		{"dest is the root", "zip_extract", map[string]any{"archive": "out.zip", "destination": ".", "expect": expect}, fault.InvalidInput},
		{"existing dest", "zip_extract", map[string]any{"archive": "out.zip", "destination": "x", "expect": expect}, fault.Conflict},
		{"bad digest", "zip_verify", map[string]any{"archive": "out.zip", "expect": map[string]string{"a.txt": "zz"}}, fault.InvalidInput},
		{"wrong digest", "zip_verify", map[string]any{"archive": "out.zip", "expect": map[string]string{"a.txt": expect["sub/b.txt"], "sub/b.txt": expect["sub/b.txt"]}}, fault.Integrity},
		{"existing archive", "zip_create", map[string]any{"archive": "out.zip", "dir": "src", "files": []string{"a.txt"}}, fault.Conflict},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := call(t, s, c.tool, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q, want %q (%v)", got, c.code, err)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(other, "y")); err == nil {
		t.Fatal("wrote through a symlink out of the root")
	}

	ro := toolSession(t, map[capability.Effect]string{capability.ArchiveRead: work})
	if _, err := call(t, ro, "zip_extract", map[string]any{"archive": "out.zip", "destination": "z", "expect": expect}); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("read-only session extracted: %v", err)
	}
	if _, err := call(t, ro, "zip_list", map[string]any{"archive": "out.zip"}); err != nil {
		t.Fatal(err)
	}
}
