package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// protectedEffects is an actor holding every effect of a tool that changes
// files in a root, and the reads that go with them.
// semindexModel offers the semantic index tools (the model is loaded on
// first use, which a refused call never reaches).
const semindexModel = "[semindex]\nmodel = \"models/minilm\"\n"

const protectedEffects = `["read_file", "write_file", "edit_file", "move_file", "list", "search", "state_write", "archive_read", "archive_write", "journal_read", "journal_write", "index_read", "index_write"]`

// protectedTree is a root holding a repository, its own configuration
// (the root is the configuration's directory), a file an absolute
// [run] protect entry names, ordinary files, and a symlink into .git.
func protectedTree(t *testing.T) (root string, s *kernel.Session) {
	t.Helper()
	root = filepath.Join(testkit.TempDir(t), "root")
	writeTree(t, root, map[string]string{
		".git/config":                  "[core]\n\tbare = false\n",
		".git/HEAD":                    "ref: refs/heads/main\n",
		".git/hooks/pre-commit.sample": "#!/bin/sh\n",
		"conf/app.ini":                 "secret = 1\n",
		"a.txt":                        "alpha\n",
		"stage/f.txt":                  "staged\n",
		"sub/s.txt":                    "sub\n",
	})
	// Private, so the journal tools would open journals in it.
	for _, d := range []string{".git", "jr"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(filepath.Join(root, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(".git", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf("[[root]]\npath = \".\"\n[run]\nprotect = [\".envrc\", %q]\n[actor.all]\neffects = %s\n%s",
		filepath.Join(root, "conf", "app.ini"), protectedEffects, semindexModel)
	_, s = startSession(t, load(t, root, doc), "all")
	return root, s
}

// writeTree writes each file of files, named relative to root, making
// the directories it lies in.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, content := range files {
		p = filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// refusedAsProtected makes each call on s: every one must be denied,
// saying the path is protected, and leave the tree under root as it was.
func refusedAsProtected(t *testing.T, s *kernel.Session, root string, calls []struct{ tool, args string }) {
	t.Helper()
	before := testkit.TreeDigest(t, root)
	for _, c := range calls {
		_, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
		if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "protected") {
			t.Errorf("%s %s: %v, want denied saying the path is protected", c.tool, c.args, err)
		}
	}
	if after := testkit.TreeDigest(t, root); after != before {
		t.Fatal("a refused call changed the tree")
	}
}

// TestProtectedPathsAcrossTools tries each protected path of a root (.git
// and what is under it, capkit.toml, a relative and an absolute
// [run] protect entry), spelled several ways and reached through a
// symlink into .git, through every tool that changes files in roots: each
// call is denied, says the path is protected, and changes nothing. Reads
// of protected paths stay allowed, and the same tools still change
// ordinary paths.
func TestProtectedPathsAcrossTools(t *testing.T) {
	root, s := protectedTree(t)
	ctx := context.Background()
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path": ".git/config"}`},
		{"read_file", `{"path": "capkit.toml"}`},
		{"list_dir", `{"path": ".git"}`},
		{"grep", `{"pattern": "bare", "path": ".git"}`},
		{"file_info", `{"path": "conf/app.ini"}`},
		{"file_digest", `{"path": ".git/HEAD"}`},
	} {
		if _, err := s.Call(ctx, c.tool, json.RawMessage(c.args)); err != nil {
			t.Errorf("%s %s: reading a protected path failed: %v", c.tool, c.args, err)
		}
	}
	abs := func(p string) string { b, _ := json.Marshal(filepath.Join(root, p)); return string(b) }
	expect := writeZip(t, filepath.Join(root, "hooks.zip"), "pre-commit", "#!/bin/sh\nevil\n")
	refusedAsProtected(t, s, root, []struct{ tool, args string }{
		{"write_file", `{"path": ".git/config", "content": "[core]\n\tfsmonitor = evil\n"}`},
		{"write_file", `{"path": ".git/hooks/pre-commit", "content": "evil"}`},
		{"write_file", `{"path": "capkit.toml", "content": "evil"}`},
		{"write_file", `{"path": "./.git/x", "content": "evil"}`},
		{"write_file", `{"path": "sub/../.git/x", "content": "evil"}`},
		{"write_file", `{"path": ".git/", "content": "evil"}`},
		{"write_file", `{"path": ` + abs(".git/config") + `, "content": "evil"}`},
		{"write_file", `{"path": ".GIT/config", "content": "evil"}`},
		{"write_file", `{"path": "link/hooks/pre-commit", "content": "evil"}`},
		{"write_file", `{"path": ".envrc", "content": "evil"}`},
		{"write_file", `{"path": "conf/app.ini", "content": "evil"}`},
		{"edit_file", `{"path": ".git/config", "old_string": "bare = false", "new_string": "fsmonitor = evil"}`},
		{"edit_file", `{"path": "capkit.toml", "old_string": "root", "new_string": "evil"}`},
		{"edit_file", `{"path": "link/config", "old_string": "bare", "new_string": "evil"}`},
		{"move_file", `{"source": ".git", "destination": "old-git"}`},
		{"move_file", `{"source": ".git/HEAD", "destination": "HEAD"}`},
		{"move_file", `{"source": "a.txt", "destination": ".git/hooks/pre-commit"}`},
		{"move_file", `{"source": "a.txt", "destination": ".envrc"}`},
		{"move_file", `{"source": "conf", "destination": "conf2"}`},
		{"move_file", `{"source": "sub", "destination": "link/sub"}`},
		{"move_file", `{"source": "link/HEAD", "destination": "HEAD"}`},
		{"create_directory", `{"path": ".git/hooks/new"}`},
		{"create_directory", `{"path": ".envrc"}`},
		{"create_directory", `{"path": "link/new"}`},
		{"file_copy", `{"source": "a.txt", "destination": ".git/hooks/pre-commit"}`},
		{"file_copy", `{"source": "a.txt", "destination": ".envrc"}`},
		{"file_copy", `{"source": "a.txt", "destination": "link/hooks/pre-commit"}`},
		{"state_replace", `{"path": ".git/config", "content": "evil"}`},
		{"state_replace", `{"path": "capkit.toml", "content": "evil"}`},
		{"state_replace", `{"path": "link/config", "content": "evil"}`},
		{"dir_publish", `{"staging": ".git", "destination": "old-git"}`},
		{"dir_publish", `{"staging": "stage", "destination": ".envrc"}`},
		{"dir_publish", `{"staging": "conf", "destination": "conf2"}`},
		{"zip_create", `{"archive": ".git/x.zip", "files": ["a.txt"]}`},
		{"zip_create", `{"archive": ".envrc", "files": ["a.txt"]}`},
		{"zip_create", `{"archive": "link/x.zip", "files": ["a.txt"]}`},
		{"zip_extract", `{"archive": "hooks.zip", "destination": ".git/hooks2", "expect": ` + expect + `}`},
		{"zip_extract", `{"archive": "hooks.zip", "destination": "link/hooks2", "expect": ` + expect + `}`},
		{"journal_append", `{"dir": ".git", "name": "index", "event": {}}`},
		{"journal_append", `{"dir": "link", "name": "x", "event": {}}`},
		{"journal_read", `{"dir": ".git", "name": "index"}`},
		{"journal_verify", `{"dir": ".git", "name": "head"}`},
		{"lexindex_update", `{"index": ".git/ix.db", "mutations": [{"ref": "r", "text": "t"}]}`},
		{"lexindex_update", `{"index": "link/ix.db", "mutations": [{"ref": "r", "text": "t"}]}`},
		{"lexindex_search", `{"index": ".git/ix.db", "query": "t"}`},
		{"semindex_remove", `{"index": ".git/sem.db", "ref": "r"}`},
		{"semindex_status", `{"index": "link/sem.db"}`},
	})
	for _, c := range []struct{ tool, args string }{
		{"write_file", `{"path": "ok/new.txt", "content": "fine"}`},
		{"write_file", `{"path": "git/config", "content": "fine"}`},
		{"edit_file", `{"path": "a.txt", "old_string": "alpha", "new_string": "beta"}`},
		{"create_directory", `{"path": "made"}`},
		{"file_copy", `{"source": "a.txt", "destination": "copy.txt"}`},
		{"state_replace", `{"path": "state.json", "content": "{}"}`},
		{"zip_create", `{"archive": "ok.zip", "files": ["a.txt"]}`},
		{"zip_extract", `{"archive": "hooks.zip", "destination": "hooks-out", "expect": ` + expect + `}`},
		{"dir_publish", `{"staging": "stage", "destination": "published"}`},
		{"move_file", `{"source": "sub", "destination": "moved"}`},
		{"journal_append", `{"dir": "jr", "name": "ok", "event": {}}`},
		{"lexindex_update", `{"index": "ix.db", "mutations": [{"ref": "r", "text": "t"}]}`},
	} {
		if c.tool == "edit_file" {
			if _, err := s.Call(ctx, "read_file", json.RawMessage(`{"path": "a.txt"}`)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Call(ctx, c.tool, json.RawMessage(c.args)); err != nil {
			t.Errorf("%s %s on an ordinary path: %v", c.tool, c.args, err)
		}
	}
}
