package tree

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

func TestTools(t *testing.T) {
	root, outside := fixture(t)
	must(t, os.Symlink(outside, filepath.Join(root, "a", "escape")))
	rt := testkit.Runtime(t, RegisterTools, &ToolOptions{Walk: Options{MaxEntries: 20, MaxDepth: 3}})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.List))
	other := testkit.Session(t, rt)
	cases := []struct {
		name string
		s    *kernel.Session
		tool string
		args string
		code fault.Code
		text string
	}{
		{"list the root", s, "tree_list", `{"path":"."}`, "", "f 0644 3 "},
		{"list a subdirectory", s, "tree_list", `{"path":"a/deep"}`, "", "1 files, 0 directories, 3 bytes"},
		{"list at the asked depth", s, "tree_list", `{"path":".","max_depth":3}`, "", "a/deep/c.txt"},
		{"list one short of the depth: an overview", s, "tree_list", `{"path":".","max_depth":2}`, "", "1 directories at the depth bound not expanded"},
		{"ask past the host's depth", s, "tree_list", `{"path":".","max_depth":4}`, fault.Limit, ""},
		{"ask past the host's entries", s, "tree_list", `{"path":".","max_entries":21}`, fault.Limit, ""},
		{"too few entries asked: an overview", s, "tree_list", `{"path":".","max_entries":9}`, "", "the overview stopped at its entry or output bound"},
		{"list through a symlink", s, "tree_list", `{"path":"out"}`, fault.Denied, ""},
		{"list through an inner symlink", s, "tree_list", `{"path":"a/escape"}`, fault.Denied, ""},
		{"list outside", s, "tree_list", `{"path":"` + outside + `"}`, fault.Denied, ""},
		{"climb out", s, "tree_list", `{"path":".."}`, fault.Denied, ""},
		{"list a file", s, "tree_list", `{"path":"f.txt"}`, fault.InvalidInput, ""},
		{"stamp a file", s, "tree_stamp", `{"path":"f.txt"}`, "", "file mode 0600 size 1 "},
		{"stamp the root", s, "tree_stamp", `{"path":"."}`, "", "dir mode "},
		{"stamp a symlink", s, "tree_stamp", `{"path":"out"}`, "", "symlink mode "},
		{"stamp outside", s, "tree_stamp", `{"path":"out/secret"}`, fault.Denied, ""},
		{"stamp missing", s, "tree_stamp", `{"path":"nope"}`, fault.NotFound, ""},
		{"no list capability", other, "tree_list", `{"path":"."}`, fault.Denied, ""},
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
			if err == nil && strings.Contains(res.Text, "secret") {
				t.Fatal("a tool reached outside the root")
			}
		})
	}
}

func TestListOutputBound(t *testing.T) {
	root, _ := fixture(t)
	s := testkit.ToolSession(t, RegisterTools, nil, []string{root}, capability.List)
	// 5,000 lines of about 240 bytes: within the entry bound, over the
	// default 1 MiB output bound.
	for i := range 5000 {
		must(t, os.Link(filepath.Join(root, "f.txt"), filepath.Join(root, "empty", strings.Repeat("x", 200)+strconv.Itoa(i))))
	}
	res, err := testkit.Call(t, s, "tree_list", `{"path":"empty"}`)
	if err != nil {
		t.Fatal(err)
	}
	var out ListResult
	if err := json.Unmarshal(res.Structured, &out); err != nil {
		t.Fatal(err)
	}
	if !out.Cut || out.Files == 0 || out.Files >= 5000 || !strings.Contains(res.Text, "list a subdirectory") {
		t.Fatalf("%+v", out)
	}
}

func TestRegisterToolsRefusesBadOptions(t *testing.T) {
	if err := RegisterTools(kernel.NewBuilder(nil), &ToolOptions{Walk: Options{MaxDepth: -1}}); err == nil {
		t.Fatal("negative depth accepted")
	}
}
