package tools

import (
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/testkit"
)

// TestRootsOrder: the writable root comes first (relative paths start
// there) even when the grants name a read-only root first, and each root
// has its mode.
func TestRootsOrder(t *testing.T) {
	rw, ro := t.TempDir(), t.TempDir()
	reads := testkit.Grant(t, []string{ro, rw}, capability.ReadFile, capability.List)
	writes := testkit.Grant(t, []string{rw}, capability.WriteFile)
	got := Roots(capability.Set{reads, writes})
	want := []Root{{rw, ModeReadWrite}, {ro, ModeReadOnly}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Roots = %+v, want %+v", got, want)
	}
	text := RootsText(got)
	for _, s := range []string{"relative paths start at the first, " + rw, "- " + rw + " (read-write)", "- " + ro + " (read-only"} {
		if !strings.Contains(text, s) {
			t.Errorf("RootsText lacks %q:\n%s", s, text)
		}
	}
	if got := Roots(capability.Set{testkit.Grant(t, []string{ro}, capability.ReadFile)}); len(got) != 1 || got[0].Mode != ModeReadOnly {
		t.Errorf("read-only only: %+v", got)
	}
	if !strings.Contains(RootsText(nil), "No file root") {
		t.Error("no roots: no word of it")
	}
}

func TestListRoots(t *testing.T) {
	rw := t.TempDir()
	rt := newRuntime(t, nil)
	s := newSession(t, rt, allEffects, rw)
	if text := mustCall(t, s, ListRoots, obj{}); !strings.Contains(text, "- "+rw+" (read-write)") {
		t.Fatalf("list_roots: %q", text)
	}
	// list_roots is granted by list, as listing a directory is.
	s2 := newSession(t, rt, []capability.Effect{capability.ReadFile}, rw)
	wantCode(t, s2, ListRoots, obj{}, "denied")
}
