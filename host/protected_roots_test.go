package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// nestedRoots configures a root and a root nested in it, each with a
// repository; the outer one holds link -> sub/.git. It returns the outer
// root and a session holding every file-changing effect on both.
func nestedRoots(t *testing.T) (root string, s *kernel.Session) {
	t.Helper()
	dir := testkit.TempDir(t)
	root = filepath.Join(dir, "root")
	writeTree(t, root, map[string]string{
		"sub/.git/config":  "[core]\n\tbare = false\n",
		"sub/.git/hooks/x": "#!/bin/sh\n",
		"sub/.git/st/f":    "staged\n",
		"a.sh":             "echo pwned\n",
	})
	// Private, so the journal tools would open journals in it.
	if err := os.Chmod(filepath.Join(root, "sub", ".git"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/.git", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	_, s = startSession(t, load(t, dir, fmt.Sprintf("[[root]]\npath = %q\n[[root]]\npath = %q\n[actor.all]\neffects = %s\n%s",
		root, filepath.Join(root, "sub"), protectedEffects, semindexModel)), "all")
	return root, s
}

// TestProtectedNestedRootThroughSymlink: with roots A and A/sub, every
// file-changing tool refuses a change reached through A by a symlink to
// A/sub/.git, which only the nested root protects, and changes nothing.
func TestProtectedNestedRootThroughSymlink(t *testing.T) {
	root, s := nestedRoots(t)
	ctx := context.Background()
	if _, err := s.Call(ctx, "read_file", json.RawMessage(`{"path": "link/config"}`)); err != nil {
		t.Fatal(err)
	}
	expect := writeZip(t, filepath.Join(root, "hooks.zip"), "pre-commit", "#!/bin/sh\nevil\n")
	refusedAsProtected(t, s, root, []struct{ tool, args string }{
		{"write_file", `{"path": "link/hooks/pre-commit", "content": "evil"}`},
		{"edit_file", `{"path": "link/config", "old_string": "bare = false", "new_string": "fsmonitor = evil"}`},
		{"create_directory", `{"path": "link/hooks/new"}`},
		{"move_file", `{"source": "a.sh", "destination": "link/hooks/pre-commit"}`},
		{"file_copy", `{"source": "a.sh", "destination": "link/hooks/pre-commit"}`},
		{"file_copy", `{"source": "a.sh", "destination": "link/hooks/new/pre-commit"}`},
		{"state_replace", `{"path": "link/config", "content": "evil"}`},
		{"dir_publish", `{"staging": "link/st", "destination": "link/published"}`},
		{"zip_create", `{"archive": "link/x.zip", "files": ["a.sh"]}`},
		{"zip_extract", `{"archive": "hooks.zip", "destination": "link/hooks2", "expect": ` + expect + `}`},
		{"journal_append", `{"dir": "link", "name": "x", "event": {}}`},
		{"lexindex_update", `{"index": "link/ix.db", "mutations": [{"ref": "r", "text": "t"}]}`},
		{"semindex_remove", `{"index": "link/sem.db", "ref": "r"}`},
		{"semindex_status", `{"index": "link/sem.db"}`},
	})
}

// TestProtectedNestedRootRenameRace swaps a directory of the outer root
// with a symlink to the nested root's .git while write_file and
// create_directory make entries under it: whichever the call finds, no
// entry lands in .git.
func TestProtectedNestedRootRenameRace(t *testing.T) {
	root, s := nestedRoots(t)
	if err := os.MkdirAll(filepath.Join(root, "p", "hooks"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("sub/.git", filepath.Join(root, "q")); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, filepath.Join(root, "p"), unix.AT_FDCWD, filepath.Join(root, "q"), unix.RENAME_EXCHANGE)
		}
	}()
	for i := range 1000 {
		s.Call(context.Background(), "write_file", json.RawMessage(fmt.Sprintf(`{"path": "p/hooks/w%d/f", "content": "evil"}`, i)))
		s.Call(context.Background(), "create_directory", json.RawMessage(fmt.Sprintf(`{"path": "p/hooks/d%d/e"}`, i)))
	}
	stop.Store(true)
	<-done
	ents, err := os.ReadDir(filepath.Join(root, "sub", ".git", "hooks"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("%d entries landed in the nested root's .git/hooks, want only x", len(ents)-1)
	}
}

// TestProtectedNarrowedRoots narrows a session to client roots inside
// the configured root (serve --client-roots narrow): a protected path
// stays protected where it lies in the configured root, whatever the
// narrowed root makes of its name, and a narrowed root inside .git is
// read-only whole (and the model is told so).
func TestProtectedNarrowedRoots(t *testing.T) {
	dir := testkit.TempDir(t)
	root := filepath.Join(dir, "root")
	for _, d := range []string{".git/hooks", "scripts/scripts"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, content := range map[string]string{"scripts/deploy.sh": "echo deploy\n", ".git/description": "repo\n"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h, _ := startSession(t, load(t, dir, fmt.Sprintf("[[root]]\npath = %q\n[run]\nprotect = [\"scripts/deploy.sh\"]\n[actor.all]\neffects = %s\n", root, protectedEffects)), "all")
	ctx := context.Background()
	for _, c := range []struct {
		within, tool, args string
		refused            bool
	}{
		{"scripts", "write_file", `{"path": "deploy.sh", "content": "evil"}`, true},
		{"scripts", "state_replace", `{"path": "deploy.sh", "content": "evil"}`, true},
		{"scripts", "move_file", `{"source": "deploy.sh", "destination": "d.sh"}`, true},
		{".git", "write_file", `{"path": "hooks/pre-commit", "content": "evil"}`, true},
		{".git", "create_directory", `{"path": "hooks/new"}`, true},
		{".git", "file_copy", `{"source": "description", "destination": "hooks/pre-commit"}`, true},
		{".git/hooks", "write_file", `{"path": "pre-commit", "content": "evil"}`, true},
		{"scripts", "write_file", `{"path": "scripts/deploy.sh", "content": "fine"}`, false},
		{"scripts", "write_file", `{"path": "other.sh", "content": "fine"}`, false},
	} {
		s, err := h.NewSession("all", true)
		if err != nil {
			t.Fatal(err)
		}
		narrowed := filepath.Join(root, c.within)
		s.NarrowRoots([]string{narrowed})
		_, err = s.Call(ctx, c.tool, json.RawMessage(c.args))
		switch {
		case c.refused && (fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "protected")):
			t.Errorf("narrowed to %s, %s %s: %v, want denied saying the path is protected", c.within, c.tool, c.args, err)
		case !c.refused && err != nil:
			t.Errorf("narrowed to %s, %s %s: %v, want allowed", c.within, c.tool, c.args, err)
		}
		if c.within == ".git" && !strings.Contains(h.Instructions(s), "whatever the root's mode (the host reads or runs them later): "+narrowed) {
			t.Errorf("narrowed to .git, the instructions do not say the root is read-only:\n%s", h.Instructions(s))
		}
	}
	for _, p := range []string{".git/hooks/pre-commit", ".git/hooks/new", "scripts/d.sh"} {
		if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s was made", p)
		}
	}
	if data, err := os.ReadFile(filepath.Join(root, "scripts", "deploy.sh")); err != nil || string(data) != "echo deploy\n" {
		t.Errorf("scripts/deploy.sh changed: %q, %v", data, err)
	}
}

// TestProtectedConfigFromSymlinkedDir starts a host from a working
// directory reached through a symlink, its configuration named relative
// to it and inside the root: the configuration stays read-only, as it is
// when started from the real directory.
func TestProtectedConfigFromSymlinkedDir(t *testing.T) {
	base := testkit.TempDir(t)
	if err := os.MkdirAll(filepath.Join(base, "real", "conf"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real", filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf("[[root]]\npath = \"..\"\n[run]\nprotect = [%q]\n[actor.all]\neffects = %s\n", filepath.Join(base, "link", "secret.sh"), protectedEffects)
	if err := os.WriteFile(filepath.Join(base, "real", "conf", "app.toml"), []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(base, "link", "conf"))
	cfg, err := config.Load("app.toml")
	if err != nil {
		t.Fatal(err)
	}
	_, s := startSession(t, cfg, "all")
	ctx := context.Background()
	if _, err := s.Call(ctx, "read_file", json.RawMessage(`{"path": "conf/app.toml"}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path": "conf/app.toml", "content": "evil"}`},
		{"edit_file", `{"path": "conf/app.toml", "old_string": "[[root]]", "new_string": "evil"}`},
		{"write_file", `{"path": "secret.sh", "content": "evil"}`},
	} {
		if _, err := s.Call(ctx, c.tool, json.RawMessage(c.args)); fault.CodeOf(err) != fault.Denied {
			t.Errorf("%s %s: %v, want denied", c.tool, c.args, err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(base, "real", "conf", "app.toml")); err != nil || string(data) != doc {
		t.Errorf("the configuration changed: %q, %v", data, err)
	}
}
