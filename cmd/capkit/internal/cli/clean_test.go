package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// capkit clean removes stale staging entries (files and directories,
// nested too) and nothing else; a missing root is not_found, a
// pseudo-filesystem root denied.
func TestCleanCommand(t *testing.T) {
	dir := t.TempDir()
	mustNil(t, os.MkdirAll(filepath.Join(dir, "sub", ".capkit-tmp-zip-x", "inner"), 0o700))
	for _, p := range []string{".capkit-tmp-write-a", "sub/.capkit-tmp-write-b", "sub/.capkit-tmp-zip-x/inner/m", "keep.txt", "sub/.capkit-other"} {
		mustNil(t, os.WriteFile(filepath.Join(dir, p), []byte("x"), 0o600))
	}
	code, out, errOut := run(t, "", "clean", dir)
	if code != 0 || !strings.Contains(out, "removed 3 stale staging entries") {
		t.Fatalf("exit %d out %q err %q", code, out, errOut)
	}
	for p, want := range map[string]bool{".capkit-tmp-write-a": false, "sub/.capkit-tmp-write-b": false, "sub/.capkit-tmp-zip-x": false, "keep.txt": true, "sub/.capkit-other": true} {
		if _, err := os.Lstat(filepath.Join(dir, p)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", p, err == nil, want)
		}
	}
	if code, out, _ := run(t, "", "clean", dir, "--json"); code != 0 || !strings.Contains(out, `"removed": 0`) {
		t.Fatalf("second clean: exit %d out %q", code, out)
	}
	if code, _, _ := run(t, "", "clean", filepath.Join(dir, "nope")); code != 3 {
		t.Fatalf("missing root: exit %d, want 3", code)
	}
	if code, _, errOut := run(t, "", "clean", "/proc"); code != 5 || !strings.Contains(errOut, "pseudo-filesystem") {
		t.Fatalf("/proc: exit %d err %q, want 5", code, errOut)
	}
}
