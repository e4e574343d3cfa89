package tools

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// TestEditResultBoundBeforeAllocation: a replace_all whose result would be
// far past limits.EditMaxFileBytes is refused with limit before its buffer
// is allocated (it was sized len(content)+n*(len(new)-len(old)) first: 30 GB
// for the first case, and the process died), and the next call is served.
func TestEditResultBoundBeforeAllocation(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "a.txt"), strings.Repeat("a", 1_000_000))
	writeFile(t, filepath.Join(root, "small.txt"), strings.Repeat("a", 2048))
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		name, path, new string
		all             bool
		code            fault.Code
	}{
		{"1 MB × 30,000 bytes", "a.txt", strings.Repeat("b", 30_000), true, fault.Limit},
		{"2 KB × 16 MiB", "small.txt", strings.Repeat("b", limits.EditMaxFileBytes), true, fault.Limit},
		{"new_string one past the file bound", "small.txt", strings.Repeat("b", limits.EditMaxFileBytes+1), true, fault.Limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mustCall(t, s, ReadFile, obj{"path": c.path, "limit": 1})
			alloc := testkit.Allocated(func() {
				wantCode(t, s, EditFile, obj{"path": c.path, "old_string": "a", "new_string": c.new, "replace_all": c.all}, c.code)
			})
			// The arguments themselves (encoded by the test, validated
			// and decoded by the kernel) are the only large allocations.
			if max := uint64(10*len(c.new)) + 4*limits.MiB; alloc > max {
				t.Fatalf("a refused edit allocated %d bytes (at most %d expected)", alloc, max)
			}
		})
	}
	// At the bound: 1,024 a's of 16 KiB each are exactly limits.EditMaxFileBytes.
	writeFile(t, filepath.Join(root, "edge.txt"), strings.Repeat("a", 1024))
	mustCall(t, s, ReadFile, obj{"path": "edge.txt"})
	at := strings.Repeat("b", limits.EditMaxFileBytes/1024)
	mustCall(t, s, EditFile, obj{"path": "edge.txt", "old_string": "a", "new_string": at, "replace_all": true})
	if got := len(readFile(t, filepath.Join(root, "edge.txt"))); got != limits.EditMaxFileBytes {
		t.Fatalf("edited file has %d bytes, want %d", got, limits.EditMaxFileBytes)
	}
	// One byte past it.
	writeFile(t, filepath.Join(root, "past.txt"), strings.Repeat("a", 1024)+"c")
	mustCall(t, s, ReadFile, obj{"path": "past.txt"})
	wantCode(t, s, EditFile, obj{"path": "past.txt", "old_string": "a", "new_string": at, "replace_all": true}, fault.Limit)
	// The server still answers.
	mustCall(t, s, ReadFile, obj{"path": "small.txt", "limit": 1})
}
