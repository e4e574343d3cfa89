package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
)

func TestTools(t *testing.T) {
	root, other, outside := t.TempDir(), t.TempDir(), t.TempDir()
	stage(t, root, "stage")
	stage(t, root, "stage2")
	stage(t, root, "nested/stage")
	stage(t, other, "stage")
	must(t, os.Symlink(outside, filepath.Join(root, "escape")))
	must(t, os.WriteFile(filepath.Join(outside, "victim"), []byte("victim"), 0o600))
	s := testkit.ToolSession(t, RegisterTools, &ToolOptions{MaxInputBytes: 200}, []string{root, other}, capability.StateWrite)
	cases := []struct {
		name, tool, args string
		code             fault.Code
	}{
		{"replace", "state_replace", `{"path":"progress.json","content":"{\"step\":3}"}`, ""},
		{"replace again", "state_replace", `{"path":"progress.json","content":"{\"step\":4}"}`, ""},
		{"replace outside", "state_replace", `{"path":"` + outside + `/victim","content":"x"}`, fault.Denied},
		{"replace through a symlink", "state_replace", `{"path":"escape/victim","content":"x"}`, fault.Denied},
		{"replace the symlink itself", "state_replace", `{"path":"escape","content":"x"}`, fault.Denied},
		{"replace a directory", "state_replace", `{"path":"stage","content":"x"}`, fault.InvalidInput},
		{"replace the root", "state_replace", `{"path":".","content":"x"}`, fault.InvalidInput},
		{"content over the input bound", "state_replace", `{"path":"big","content":"` + strings.Repeat("x", 200) + `"}`, fault.Limit},
		{"publish", "dir_publish", `{"staging":"stage","destination":"pub"}`, ""},
		{"publish onto existing", "dir_publish", `{"staging":"stage2","destination":"pub"}`, fault.Conflict},
		{"publish across parents", "dir_publish", `{"staging":"nested/stage","destination":"pub2"}`, fault.InvalidInput},
		{"publish across roots", "dir_publish", `{"staging":"` + other + `/stage","destination":"pub3"}`, fault.InvalidInput},
		{"publish into a symlinked directory", "dir_publish", `{"staging":"stage2","destination":"escape/pub"}`, fault.InvalidInput},
		{"publish outside", "dir_publish", `{"staging":"stage2","destination":"` + outside + `/pub"}`, fault.Denied},
		{"publish the root", "dir_publish", `{"staging":".","destination":"x"}`, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := testkit.Call(t, s, c.tool, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(root, "progress.json")); string(b) != `{"step":4}` {
		t.Fatalf("state %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "victim")); string(b) != "victim" {
		t.Fatal("a tool wrote outside its root")
	}
	if _, err := os.Lstat(filepath.Join(outside, "pub")); !os.IsNotExist(err) {
		t.Fatal("a tool published outside its root")
	}
	if b, _ := os.ReadFile(filepath.Join(root, "pub", "a")); string(b) != "a" {
		t.Fatal("publication missing")
	}
	noTemps(t, root)
}
