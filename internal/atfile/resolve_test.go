package atfile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func TestResolve(t *testing.T) {
	roots := []string{"/x/root", "/y/other"}
	cases := []struct {
		in       string
		root     string
		rel      string
		wantCode fault.Code
	}{
		{"a.txt", "/x/root", "a.txt", ""},
		{"./a/b/../c", "/x/root", "a/c", ""},
		{".", "/x/root", ".", ""},
		{"/x/root", "/x/root", ".", ""},
		{"/x/root/sub/f", "/x/root", "sub/f", ""},
		{"/y/other/f", "/y/other", "f", ""},
		{"%2e%2e/secret", "/x/root", "%2e%2e/secret", ""},
		{"..", "", "", fault.Denied},
		{"../x", "", "", fault.Denied},
		{"a/../../x", "", "", fault.Denied},
		{"/x/root/../root_evil/f", "", "", fault.Denied},
		{"/x/root_evil/f", "", "", fault.Denied},
		{"/etc/passwd", "", "", fault.Denied},
		{"/proc/self/root/etc/passwd", "", "", fault.Denied},
		{"", "", "", fault.InvalidInput},
		{"a\x00b", "", "", fault.InvalidInput},
		{"a\nb", "", "", fault.InvalidInput},
		{"~/x", "", "", fault.InvalidInput},
		{"~", "", "", fault.InvalidInput},
		{"a.txt ", "", "", fault.InvalidInput},
		{"a.txt\"", "", "", fault.InvalidInput},
		{"'a.txt'", "", "", fault.InvalidInput},
		{"\xff", "", "", fault.InvalidInput},
		{strings.Repeat("a/", limits.PathMaxBytes/2) + "b", "", "", fault.Limit},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			root, rel, err := Resolve(roots, c.in)
			if got := fault.CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, c.wantCode)
			}
			if err == nil && (root != c.root || rel != c.rel) {
				t.Fatalf("got %q %q, want %q %q", root, rel, c.root, c.rel)
			}
		})
	}
	if _, _, err := Resolve(nil, "a"); fault.CodeOf(err) != fault.Denied {
		t.Fatal("no roots must deny")
	}
	at := strings.Repeat("a", limits.PathMaxBytes)
	if _, _, err := Resolve(roots, at); err != nil {
		t.Fatalf("path at the limit: %v", err)
	}
	if _, _, err := Resolve(roots, at+"a"); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the limit: %v", err)
	}
}

func TestResolvePrefersLongestRoot(t *testing.T) {
	root, rel, err := Resolve([]string{"/x", "/x/inner"}, "/x/inner/f")
	if err != nil || root != "/x/inner" || rel != "f" {
		t.Fatalf("%q %q %v", root, rel, err)
	}
}

func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "/x/root/../../etc", "/x/root_evil", "a/./b/../../..", "%2e%2e", "~", "/x/root\x00/a"} {
		f.Add(s)
	}
	roots := []string{"/x/root", "/y"}
	f.Fuzz(func(t *testing.T, p string) {
		root, rel, err := Resolve(roots, p)
		if err != nil {
			return
		}
		full := filepath.Join(root, filepath.FromSlash(rel))
		if !capability.Within(root, full) {
			t.Fatalf("Resolve(%q) = %q %q escapes", p, root, rel)
		}
		if rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) {
			t.Fatalf("Resolve(%q) rel %q", p, rel)
		}
	})
}
