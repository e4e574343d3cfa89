package scope

import (
	"errors"
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
			root, rel, err := In(roots, capability.Protected{}).lexical(c.in)
			if got := fault.CodeOf(err); got != c.wantCode {
				t.Fatalf("code %q (%v), want %q", got, err, c.wantCode)
			}
			if err == nil && (root != c.root || rel != c.rel) {
				t.Fatalf("got %q %q, want %q %q", root, rel, c.root, c.rel)
			}
		})
	}
	if _, err := In(nil, capability.Protected{}).Resolve("a"); fault.CodeOf(err) != fault.Denied {
		t.Fatal("no roots must deny")
	}
	at := strings.Repeat("a", limits.PathMaxBytes)
	if _, _, err := resolve(roots, at); err != nil {
		t.Fatalf("path at the limit: %v", err)
	}
	if _, _, err := resolve(roots, at+"a"); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the limit: %v", err)
	}
}

func TestResolvePrefersLongestRoot(t *testing.T) {
	root, rel, err := resolve([]string{"/x", "/x/inner"}, "/x/inner/f")
	if err != nil || root != "/x/inner" || rel != "f" {
		t.Fatalf("%q %q %v", root, rel, err)
	}
}

func TestResolveRefusesStaging(t *testing.T) {
	for _, p := range []string{StagingPrefix + "x", "a/" + StagingPrefix + "x/b", "/r/" + StagingPrefix + "x"} {
		if _, _, err := resolve([]string{"/r"}, p); !errors.Is(err, ErrReserved) || !strings.Contains(err.Error(), "reserved") {
			t.Errorf("resolve(%q): %v", p, err)
		}
	}
	if _, _, err := resolve([]string{"/r"}, "a/x"+StagingPrefix); err != nil {
		t.Errorf("a name merely containing the prefix: %v", err)
	}
}

func TestIsStaging(t *testing.T) {
	for name, want := range map[string]bool{
		StagingPrefix + "1":        true,
		"a/" + StagingPrefix + "x": true,
		StagingPrefix + "d/file":   true,
		"a/b.capkit-tmp-x":         false,
		"capkit-tmp-1":             false,
		"a/b":                      false,
	} {
		if got := IsStaging(name); got != want {
			t.Errorf("IsStaging(%q) = %v", name, got)
		}
	}
}

// A path under a root the session holds for other effects only says so.
func TestResolveNotGranted(t *testing.T) {
	rw, ro := tempRoot(t), tempRoot(t)
	write, err := capability.New("a", []capability.Effect{capability.WriteFile, capability.ReadFile}, capability.Scope{Roots: []string{rw}})
	if err != nil {
		t.Fatal(err)
	}
	read, err := capability.New("a", []capability.Effect{capability.ReadFile}, capability.Scope{Roots: []string{ro}})
	if err != nil {
		t.Fatal(err)
	}
	caps := capability.Set{write, read}
	_, err = New(caps, capability.WriteFile, capability.Protected{}).Resolve(filepath.Join(ro, "f"))
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "write_file is not granted under that root") {
		t.Errorf("a write under a read-only root: %v, want denied saying it is not granted there", err)
	}
	_, err = New(caps, capability.WriteFile, capability.Protected{}).Resolve("/elsewhere/f")
	if fault.CodeOf(err) != fault.Denied || !strings.Contains(err.Error(), "outside the allowed roots") {
		t.Errorf("a write outside every root: %v, want denied as outside", err)
	}
	tg, err := New(caps, capability.ReadFile, capability.Protected{}).Resolve(filepath.Join(ro, "d/f"))
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	if tg.Root() != ro || tg.Name() != "d/f" || tg.Display() != ro+"/d/f" || tg.HostPath() != filepath.Join(ro, "d/f") {
		t.Errorf("target %q %q %q %q", tg.Root(), tg.Name(), tg.Display(), tg.HostPath())
	}
}

func TestJoin(t *testing.T) {
	root := tempRoot(t, "d")
	base := resolveIn(t, []string{root}, "d")
	for _, c := range []struct {
		rel, name string
		code      fault.Code
	}{
		{"x/y", "d/x/y", ""},
		{"./x/../y", "d/y", ""},
		{".", "d", ""},
		{"..", "", fault.Denied},
		{"x/../../y", "", fault.Denied},
		{"/etc", "", fault.InvalidInput},
		{StagingPrefix + "x", "", fault.InvalidInput},
		{"", "", fault.InvalidInput},
	} {
		j, err := base.Join(c.rel)
		if fault.CodeOf(err) != c.code {
			t.Errorf("Join(%q): %v, want %q", c.rel, err, c.code)
			continue
		}
		if err == nil {
			if j.Name() != c.name || j.Display() != c.name {
				t.Errorf("Join(%q) = %q shown %q, want %q", c.rel, j.Name(), j.Display(), c.name)
			}
			j.Close()
		}
	}
}

// FuzzResolve: whatever it is given, what Resolve accepts is inside the
// root it names, with no element climbing out or in the staging
// namespace, and what a target opens there is inside it too.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "/x/root/../../etc", "/x/root_evil", "a/./b/../../..", "%2e%2e", "~", "/x/root\x00/a",
		"link-out/secret", "sub/../../outside", StagingPrefix + "x", "./sub//b.txt", strings.Repeat("a/", 3000)} {
		f.Add(s)
	}
	fx := newEscapeFixture(f)
	f.Fuzz(func(t *testing.T, p string) {
		root, rel, err := resolve([]string{"/x/root", "/y"}, p)
		if err == nil {
			full := filepath.Join(root, filepath.FromSlash(rel))
			if !capability.Within(root, full) || rel == ".." || strings.HasPrefix(rel, "../") || filepath.IsAbs(rel) || IsStaging(rel) {
				t.Fatalf("resolve(%q) = %q %q", p, root, rel)
			}
		}
		fx.check(t, p)
	})
}

func TestSplitRel(t *testing.T) {
	for _, c := range []struct {
		in, dir, name string
		code          fault.Code
	}{
		{"a", ".", "a", ""}, {"a/b/c", "a/b", "c", ""},
		{".", "", "", fault.InvalidInput}, {"", "", "", fault.InvalidInput},
		{"..", "", "", fault.Denied}, {"../a", "", "", fault.Denied}, {"/a", "", "", fault.Denied},
	} {
		dir, name, err := splitRel(c.in)
		if dir != c.dir || name != c.name || fault.CodeOf(err) != c.code {
			t.Errorf("splitRel(%q) = %q %q %v", c.in, dir, name, err)
		}
	}
}
