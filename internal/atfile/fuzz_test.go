package atfile

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzSplit checks the path splitters: what they accept splits into a
// parent and one plain element that join back to the cleaned input, and
// a root-relative parent never climbs out.
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
		if dir, name, err := SplitRel(p); err == nil {
			check("SplitRel", dir, name)
			if dir == ".." || strings.HasPrefix(dir, "../") || strings.HasPrefix(dir, "/") {
				t.Fatalf("SplitRel(%q) parent %q climbs out", p, dir)
			}
			if filepath.Join(dir, name) != filepath.Clean(p) {
				t.Fatalf("SplitRel(%q) = %q %q", p, dir, name)
			}
		}
	})
}
