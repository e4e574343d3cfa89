package fileio

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func newSession(t *testing.T, opts *ToolOptions, caps ...capability.Capability) *kernel.Session {
	t.Helper()
	return testkit.Session(t, testkit.Runtime(t, RegisterTools, opts), caps...)
}

func TestTools(t *testing.T) {
	outside := fixture(t)
	root := fixture(t)
	out := t.TempDir()
	must(t, os.Symlink(filepath.Join(outside, "abc"), filepath.Join(root, "escape")))
	must(t, os.Symlink(outside, filepath.Join(root, "escapedir")))
	must(t, os.WriteFile(filepath.Join(out, "taken"), []byte("x"), 0o600))
	s := newSession(t, &ToolOptions{MaxStreamBytes: 5},
		testkit.Grant(t, []string{root}, capability.ReadFile),
		testkit.Grant(t, []string{out}, capability.WriteFile))
	readOnly := newSession(t, nil, testkit.Grant(t, []string{root}, capability.ReadFile))
	writeOnly := newSession(t, nil, testkit.Grant(t, []string{out}, capability.WriteFile))
	cases := []struct {
		name string
		s    *kernel.Session
		tool string
		args string
		code fault.Code
		text string
	}{
		{"digest", s, "file_digest", `{"path":"abc"}`, "", "sha256 ba7816bf"},
		{"digest absolute inside root", s, "file_digest", `{"path":"` + root + `/sub/inner"}`, "", "(5 bytes)"},
		{"digest at the host budget", s, "file_digest", `{"path":"sub/inner","max_bytes":5}`, "", "(5 bytes)"},
		{"digest over a smaller model budget", s, "file_digest", `{"path":"sub/inner","max_bytes":4}`, fault.Limit, ""},
		{"model budget over the host's", s, "file_digest", `{"path":"abc","max_bytes":6}`, fault.Limit, ""},
		{"absolute path climbing out", s, "file_digest", `{"path":"` + root + `/../` + filepath.Base(outside) + `/abc"}`, fault.Denied, ""},
		{"climbing out", s, "file_digest", `{"path":"../x"}`, fault.Denied, ""},
		{"absolute outside", s, "file_digest", `{"path":"/etc/passwd"}`, fault.Denied, ""},
		{"symlink leading out", s, "file_digest", `{"path":"escape"}`, fault.Denied, ""},
		{"directory symlink leading out", s, "file_digest", `{"path":"escapedir/abc"}`, fault.Denied, ""},
		{"the root itself", s, "file_digest", `{"path":"."}`, fault.InvalidInput, ""},
		{"fifo", s, "file_digest", `{"path":"fifo"}`, fault.InvalidInput, ""},
		{"copy", s, "file_copy", `{"source":"abc","destination":"` + out + `/abc"}`, "", "copied 3 bytes"},
		{"copy creating parents", s, "file_copy", `{"source":"abc","destination":"` + out + `/new/dir/abc"}`, "", "copied 3 bytes"},
		{"copy a missing source: no parents made", s, "file_copy", `{"source":"nope","destination":"` + out + `/none/abc"}`, fault.NotFound, ""},
		{"copy a source over the budget: no parents made", s, "file_copy", `{"source":"sub/inner","destination":"` + out + `/none/big","max_bytes":4}`, fault.Limit, ""},
		{"copy under a file", s, "file_copy", `{"source":"abc","destination":"` + out + `/taken/abc"}`, fault.InvalidInput, ""},
		{"copy onto existing", s, "file_copy", `{"source":"abc","destination":"` + out + `/taken"}`, fault.Conflict, ""},
		{"copy into the read-only root", s, "file_copy", `{"source":"abc","destination":"` + root + `/new"}`, fault.Denied, ""},
		{"copy from outside the read roots", s, "file_copy", `{"source":"` + out + `/taken","destination":"` + out + `/t2"}`, fault.Denied, ""},
		{"copy over the budget", s, "file_copy", `{"source":"sub/inner","destination":"` + out + `/big","max_bytes":4}`, fault.Limit, ""},
		{"copy without write_file", readOnly, "file_copy", `{"source":"abc","destination":"` + out + `/x"}`, fault.Denied, ""},
		{"copy without read_file", writeOnly, "file_copy", `{"source":"` + out + `/taken","destination":"` + out + `/x"}`, fault.Denied, ""},
		{"digest without read_file", writeOnly, "file_digest", `{"path":"` + out + `/taken"}`, fault.Denied, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, c.s, c.tool, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil && !strings.Contains(res.Text, c.text) {
				t.Fatalf("text %q, want %q", res.Text, c.text)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(out, "abc")); string(b) != "abc" {
		t.Fatalf("copy content %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(out, "new", "dir", "abc")); string(b) != "abc" {
		t.Fatalf("copy into new parents: %q", b)
	}
	if _, err := os.Lstat(filepath.Join(out, "none")); !os.IsNotExist(err) {
		t.Fatal("a refused copy created the destination's parents")
	}
	if _, err := os.Lstat(filepath.Join(root, "new")); !os.IsNotExist(err) {
		t.Fatal("a denied copy wrote into the read-only root")
	}
}

func TestToolsAreDeferred(t *testing.T) {
	rt := testkit.Runtime(t, RegisterTools, nil)
	for _, name := range []string{"file_digest", "file_copy"} {
		e, _, ok := rt.Catalog().Lookup(name)
		if !ok || e.Hot {
			t.Fatalf("%s: registered %v, hot %v", name, ok, ok && e.Hot)
		}
	}
}

// TestToolBudget checks the tools' default budget and a model's max_bytes
// at the host's budget and one past it, without a 1 GiB file.
func TestToolBudget(t *testing.T) {
	if got := (*ToolOptions)(nil).budget(); got != limits.FileToolStreamBytes {
		t.Fatalf("default budget %d", got)
	}
	cases := []struct {
		asked, budget, want int64
		code                fault.Code
	}{
		{0, limits.FileToolStreamBytes, limits.FileToolStreamBytes, ""},
		{limits.FileToolStreamBytes, limits.FileToolStreamBytes, limits.FileToolStreamBytes, ""},
		{limits.FileToolStreamBytes + 1, limits.FileToolStreamBytes, 0, fault.Limit},
		{1, 5, 1, ""},
		{-1, 5, 0, fault.InvalidInput},
	}
	for _, c := range cases {
		got, err := modelBudget(c.asked, c.budget)
		if fault.CodeOf(err) != c.code || got != c.want {
			t.Errorf("modelBudget(%d, %d) = %d, %v", c.asked, c.budget, got, err)
		}
	}
}
