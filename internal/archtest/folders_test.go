package archtest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
)

// mixedFolders names each top-level folder whose packages stand on more
// than one floor (as floor classifies them), with the packages of each
// floor. Test support is not a
// floor of the program (only _test files import it, as TestLayers checks),
// so it is left out: internal/ holds the ground and the ground's test
// support.
func mixedFolders(paths []string, floor func(string) layer) []string {
	floors := map[string]map[layer][]string{}
	for _, p := range paths {
		if isTestSupport(p) {
			continue
		}
		top, _, _ := strings.Cut(p, "/")
		if floors[top] == nil {
			floors[top] = map[layer][]string{}
		}
		floors[top][floor(p)] = append(floors[top][floor(p)], p)
	}
	var mixed []string
	for _, top := range slices.Sorted(maps.Keys(floors)) {
		if len(floors[top]) < 2 {
			continue
		}
		var parts []string
		for _, l := range slices.Sorted(maps.Keys(floors[top])) {
			parts = append(parts, fmt.Sprintf("%s: %s", layerNames[l], strings.Join(floors[top][l], " ")))
		}
		mixed = append(mixed, top+"/ holds "+strings.Join(parts, "; "))
	}
	return mixed
}

// isTestSupport reports whether p is a test-support package or below one.
func isTestSupport(p string) bool {
	return slices.ContainsFunc(testSupport, func(s string) bool { return p == s || strings.HasPrefix(p, s+"/") })
}

// TestOneFloorPerFolder fails when a top-level folder holds packages of
// two floors, so that a picture of the folders is the picture of the
// floors: no arrow between folders runs back up unseen.
func TestOneFloorPerFolder(t *testing.T) {
	var paths []string
	for _, p := range listPackages(t) {
		if r, ok := rel(p.ImportPath); ok {
			paths = append(paths, r)
		}
	}
	for _, m := range mixedFolders(paths, classify) {
		t.Error(m)
	}
	for _, p := range paths {
		if top, _, _ := strings.Cut(p, "/"); top == "internal" && !isTestSupport(p) && classify(p) != ground {
			t.Errorf("%s is in internal/, which holds only the ground (%s)", p, layerNames[classify(p)])
		}
	}
}

// TestMixedFoldersProbe holds the rule to the floors as they were
// classified before the commands left internal/ and the file seam became
// a group's package: the seam on the kernel floor beside its groups, and
// the commands on a floor of their own beside the main (here the front
// door's), are reported; test support beside the ground is not.
func TestMixedFoldersProbe(t *testing.T) {
	before := func(p string) layer {
		switch {
		case p == "files":
			return core
		case strings.HasPrefix(p, "cmd/capkit/internal/cli"):
			return frontDoor
		}
		return classify(p)
	}
	paths := []string{
		"internal/atfile", "internal/testkit", "internal/testkit/pgtest",
		"kernel", "kernel/catalog", "files", "files/tools", "cmd/capkit", "cmd/capkit/internal/cli",
	}
	if got := mixedFolders(paths, classify); len(got) != 0 {
		t.Errorf("a tree of one floor per folder reported %q", got)
	}
	want := []string{
		"cmd/ holds front door: cmd/capkit/internal/cli; cmd: cmd/capkit",
		"files/ holds kernel: files; group: files/tools",
	}
	if got := mixedFolders(paths, before); !slices.Equal(got, want) {
		t.Errorf("mixed folders = %q, want %q", got, want)
	}
}
