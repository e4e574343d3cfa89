package tools

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/testkit"
)

const crashEnv = "CAPKIT_FSTOOLS_CRASH_ROOT"

var crashContents = [2]string{strings.Repeat("a", 2<<20), strings.Repeat("b", 3<<20)}

// TestCrashWriterProcess is the writer the crash test runs in a child
// process: it replaces one file with write_file, alternating two contents,
// until it is killed. Without the environment variable it does nothing.
func TestCrashWriterProcess(t *testing.T) {
	root := os.Getenv(crashEnv)
	if root == "" {
		t.Skip("helper process of TestCrashLeavesOldOrNew")
	}
	s := newSession(t, newRuntime(t, &ToolOptions{DisableGate: true}), allEffects, root)
	for i := 0; ; i++ {
		mustCall(t, s, WriteFile, obj{"path": "f.txt", "content": crashContents[i%2]})
	}
}

// TestCrashLeavesOldOrNew kills a writer with SIGKILL at random points
// while it replaces a file: the file always holds one whole content, and
// a staging file left behind is never listed, found or served.
func TestCrashLeavesOldOrNew(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns writer processes")
	}
	root := testkit.TempDir(t)
	file := filepath.Join(root, "f.txt")
	writeFile(t, file, crashContents[0])
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	staged := 0
	for i := range 12 {
		child := testkit.StartChild(t, "TestCrashWriterProcess", crashEnv+"="+root)
		time.Sleep(time.Duration(30+rand.IntN(120)) * time.Millisecond)
		child.Kill(t)
		child.Wait()

		got := readFile(t, file)
		if got != crashContents[0] && got != crashContents[1] {
			t.Fatalf("kill %d left a torn file: %d bytes, starts %.8q, ends %.8q", i, len(got), got, got[max(0, len(got)-8):])
		}
		entries, _ := os.ReadDir(root)
		for _, e := range entries {
			if !scope.IsStaging(e.Name()) {
				continue
			}
			staged++
			wantCode(t, s, ReadFile, obj{"path": e.Name()}, fault.InvalidInput)
			wantCode(t, s, EditFile, obj{"path": e.Name(), "old_string": "a", "new_string": "b"}, fault.InvalidInput)
		}
		for _, c := range []struct {
			tool string
			args obj
		}{
			{ListDir, obj{}},
			{Glob, obj{"pattern": "**"}},
			{Glob, obj{"pattern": ".*"}},
			{Grep, obj{"pattern": "a", "head_limit": 1}},
		} {
			if text := mustCall(t, s, c.tool, c.args); strings.Contains(text, scope.StagingPrefix) {
				t.Fatalf("%s served a staging file:\n%s", c.tool, text)
			}
		}
		// The file stays usable: read, then replace it through the tools.
		mustCall(t, s, ReadFile, obj{"path": "f.txt", "limit": 1})
		mustCall(t, s, WriteFile, obj{"path": "f.txt", "content": crashContents[i%2]})
	}
	t.Logf("%d staging files were left by killed writers", staged)
}
