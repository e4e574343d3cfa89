package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/fault"
)

// TestStateReplaceGoesThroughTheFileGate is the red-team input: with
// state_write granted, state_replace on a file the session never read is
// refused like write_file (conflict) and changes neither its content nor
// its mode; after read_file it replaces the file, keeping its mode, and
// write_file then sees the session's own state_replace as read.
func TestStateReplaceGoesThroughTheFileGate(t *testing.T) {
	dir := fixture(t)
	main := filepath.Join(dir, "rw", "main.go")
	if err := os.WriteFile(main, []byte("package main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, s := startSession(t, load(t, dir, allEffects), "all")
	do := func(tool string, args map[string]any) error {
		b, _ := json.Marshal(args)
		_, err := s.Call(context.Background(), tool, b)
		return err
	}
	unchanged := func(want string) {
		t.Helper()
		st, err := os.Stat(main)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(main)
		if string(b) != want || st.Mode().Perm() != 0o644 {
			t.Fatalf("main.go is %q, mode %v; want %q, 0644", b, st.Mode().Perm(), want)
		}
	}
	for _, tool := range []string{"write_file", "state_replace"} {
		err := do(tool, map[string]any{"path": "main.go", "content": "overwritten"})
		if fault.CodeOf(err) != fault.Conflict {
			t.Fatalf("%s of a never-read file: %v, want conflict", tool, err)
		}
		unchanged("package main\n")
	}
	if err := do("read_file", map[string]any{"path": "main.go"}); err != nil {
		t.Fatal(err)
	}
	if err := do("state_replace", map[string]any{"path": "main.go", "content": "package main // 2\n"}); err != nil {
		t.Fatalf("state_replace after read_file: %v", err)
	}
	unchanged("package main // 2\n")
	if err := do("write_file", map[string]any{"path": "main.go", "content": "package main // 3\n"}); err != nil {
		t.Fatalf("write_file after the session's own state_replace: %v", err)
	}
	if err := os.WriteFile(main, []byte("changed behind the session\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := do("state_replace", map[string]any{"path": "main.go", "content": "stale"}); fault.CodeOf(err) != fault.Conflict {
		t.Fatalf("state_replace of a file changed since it was read: %v, want conflict", err)
	}
	unchanged("changed behind the session\n")
	if err := do("state_replace", map[string]any{"path": "new-state.json", "content": "{}"}); err != nil {
		t.Fatalf("state_replace creating a new file: %v", err)
	}
	if st, err := os.Stat(filepath.Join(dir, "rw", "new-state.json")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("new state file: %v %v, want mode 0600", st, err)
	}
}
