package helper

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestHandled: the rights a ruleset handles on each ABI, as the kernel's
// documentation lists them (and go-landlock's best effort chose them).
func TestHandled(t *testing.T) {
	for _, tc := range []struct {
		abi                int
		fs, net, scoped    uint64
		refer, udp, scopes bool
	}{
		{0, 0, 0, 0, false, false, false},
		{1, 1<<13 - 1, 0, 0, false, false, false},
		{2, 1<<14 - 1, 0, 0, true, false, false},
		{4, 1<<15 - 1, 3, 0, true, false, false},
		{6, 1<<16 - 1, 3, 3, true, false, true},
		{9, 1<<17 - 1, 3, 3, true, false, true},
		{10, 1<<17 - 1, 15, 3, true, true, true},
		{12, 1<<17 - 1, 15, 3, true, true, true},
	} {
		fs, net, scoped := handled(tc.abi)
		if fs != tc.fs || net != tc.net || scoped != tc.scoped {
			t.Errorf("ABI %d: %#x %#x %#x, want %#x %#x %#x", tc.abi, fs, net, scoped, tc.fs, tc.net, tc.scoped)
		}
	}
}

// TestLookPath: a program is found in PATH's directories in order; one
// found through a relative entry, or in none, is refused.
func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
		os.WriteFile(filepath.Join(dir, d, "prog"), []byte("#!/bin/sh\n"), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "a", "data"), nil, 0o644)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, tc := range []struct {
		name, path, want string
	}{
		{"prog", a + ":" + b, a + "/prog"},
		{"prog", "/nonexistent:" + b, b + "/prog"},
		{"data", a, ""},
		{"./x", "", "./x"},
		{"missing", a, ""},
	} {
		got, err := lookPath(tc.name, []string{"PATH=" + tc.path})
		if got != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("lookPath(%q, %q) = %q, %v; want %q", tc.name, tc.path, got, err, tc.want)
		}
	}
	t.Chdir(dir)
	if _, err := lookPath("prog", []string{"PATH=a"}); err == nil || !strings.Contains(err.Error(), "relative") {
		t.Errorf("found through a relative entry: %v", err)
	}
}

// TestRulePathsInRoots: a rule's path in a root is opened with no
// symbolic link in any element (a link swapped in by a process writing
// the root must not carry its grant elsewhere); a system path may be one.
func TestRulePathsInRoots(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	if err := os.MkdirAll(filepath.Join(real, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path   string
		inRoot bool
		ok     bool
	}{
		{filepath.Join(real, "sub"), true, true},
		{link, true, false},
		{filepath.Join(link, "sub"), true, false},
		{link, false, true},
		{filepath.Join(link, "sub"), false, true},
	} {
		fd, err := openRulePath(tc.path, tc.inRoot)
		if err == nil {
			syscall.Close(fd)
		}
		if (err == nil) != tc.ok {
			t.Errorf("openRulePath(%s, inRoot %v): %v", tc.path, tc.inRoot, err)
		}
	}
}
