package tools

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
)

// TestConcurrentEditsLoseNothing: many sessions edit one file at once.
// Every edit either lands on the version its session read or fails with
// conflict; each landed edit is in the final content exactly once.
func TestConcurrentEditsLoseNothing(t *testing.T) {
	for _, disable := range []bool{false, true} {
		t.Run(fmt.Sprintf("DisableGate=%v", disable), func(t *testing.T) {
			root := testkit.TempDir(t)
			file := filepath.Join(root, "shared.txt")
			writeFile(t, file, "header\nEND\n")
			rt := newRuntime(t, &ToolOptions{DisableGate: disable})
			const sessions, editsEach, attempts = 12, 3, 200
			var (
				mu        sync.Mutex
				landed    []string
				conflicts int
				wg        sync.WaitGroup
			)
			for i := range sessions {
				s := newSession(t, rt, allEffects, root)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for e := range editsEach {
						line := fmt.Sprintf("session %d edit %d", i, e)
						for range attempts {
							if _, err := testkit.Call(t, s, ReadFile, obj{"path": "shared.txt"}); err != nil {
								t.Error(err)
								return
							}
							_, err := testkit.Call(t, s, EditFile, obj{"path": "shared.txt", "old_string": "END\n", "new_string": line + "\nEND\n"})
							if err == nil {
								mu.Lock()
								landed = append(landed, line)
								mu.Unlock()
								break
							}
							if fault.CodeOf(err) != fault.Conflict {
								t.Errorf("edit failed with %v, want success or conflict", err)
								return
							}
							mu.Lock()
							conflicts++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			final := readFile(t, file)
			for _, l := range landed {
				if n := strings.Count(final, l+"\n"); n != 1 {
					t.Errorf("landed edit %q appears %d times", l, n)
				}
			}
			if got := strings.Count(final, "session "); got != len(landed) {
				t.Fatalf("final content has %d edits, %d landed:\n%s", got, len(landed), final)
			}
			if len(landed) != sessions*editsEach {
				t.Fatalf("%d of %d edits landed within %d attempts", len(landed), sessions*editsEach, attempts)
			}
			if !strings.HasPrefix(final, "header\n") || !strings.HasSuffix(final, "END\n") {
				t.Fatalf("final content mangled:\n%s", final)
			}
			t.Logf("%d edits landed, %d conflicts", len(landed), conflicts)
		})
	}
}
