package atfile

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSplit checks the host path splitter: what it accepts splits into a
// parent and one plain element that join back to the cleaned input.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"/a/b", "/", "a/b", "..", "../a", "/a/..", "a/./b/", "/a\x00b", "//a//b//", "a/b/../../.."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		check := func(fn, dir, name string) {
			if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
				t.Fatalf("%s(%q): bad name %q", fn, p, name)
			}
			if checkName(name) != nil {
				t.Fatalf("%s(%q): name %q refused by checkName", fn, p, name)
			}
			_ = dir
		}
		if dir, name, err := SplitParent(p); err == nil {
			check("SplitParent", dir, name)
			if filepath.Join(dir, name) != filepath.Clean(p) || !filepath.IsAbs(dir) {
				t.Fatalf("SplitParent(%q) = %q %q", p, dir, name)
			}
		}
	})
}
