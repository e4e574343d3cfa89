package capability

import (
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

func TestProtectedPaths(t *testing.T) {
	p := NewProtected(".envrc", "/w/a/conf/app.ini", "/w/a", "/elsewhere/x")
	got := p.Paths([]string{"/w/a", "/w/b"})
	want := []string{
		"/w/a/.git", "/w/a/capkit.toml", "/w/a/.envrc", "/w/a/conf/app.ini",
		"/w/b/.git", "/w/b/capkit.toml", "/w/b/.envrc",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Paths = %q, want %q (relative entries in every root, absolute ones inside a root but not a root itself)", got, want)
	}
	if got, want := p.Relative(), []string{".git", "capkit.toml", ".envrc"}; !slices.Equal(got, want) {
		t.Errorf("Relative = %q, want %q", got, want)
	}
	var zero Protected
	if got := zero.Paths([]string{"/r"}); !slices.Equal(got, []string{"/r/.git", "/r/capkit.toml"}) {
		t.Errorf("zero value Paths = %q, want .git and capkit.toml", got)
	}
}

func TestProtectedCheck(t *testing.T) {
	p := NewProtected(".envrc", "/w/a/conf/app.ini")
	roots := []string{"/w/a", "/w/a/nested"}
	for _, c := range []struct {
		name          string
		write, rename bool // refused by CheckWrite, CheckRename
		wantInMessage string
		root          string // "" is roots[0]
	}{
		{name: ".git", write: true, rename: true, wantInMessage: ".git is protected"},
		{name: ".git/config", write: true, rename: true},
		{name: ".git/hooks/pre-commit", write: true, rename: true},
		{name: ".GIT/Config", write: true, rename: true},
		{name: "capkit.toml", write: true, rename: true},
		{name: "CapKit.TOML", write: true, rename: true},
		{name: ".envrc", write: true, rename: true},
		{name: "conf/app.ini", write: true, rename: true},
		{name: "conf", rename: true, wantInMessage: "conf holds the protected conf/app.ini"},
		{name: ".", rename: true},
		{name: "nested/.git/config", write: true, rename: true},
		{name: ".git", root: "/w/a/nested", write: true, rename: true, wantInMessage: "nested/.git is protected"},
		{name: "sub/.git/config"},
		{name: ".gitignore"},
		{name: ".git-x"},
		{name: "capkit.toml.bak"},
		{name: "conf/other.ini"},
		{name: "src/main.go"},
	} {
		root := c.root
		if root == "" {
			root = roots[0]
		}
		for _, k := range []struct {
			check   func([]string, string, string) error
			refused bool
			what    string
		}{{p.CheckWrite, c.write, "CheckWrite"}, {p.CheckRename, c.rename, "CheckRename"}} {
			err := k.check(roots, root, c.name)
			switch {
			case !k.refused && err != nil:
				t.Errorf("%s(%s in %s) = %v, want allowed", k.what, c.name, root, err)
			case k.refused && fault.CodeOf(err) != fault.Denied:
				t.Errorf("%s(%s in %s) = %v, want denied", k.what, c.name, root, err)
			case k.refused && !strings.Contains(err.Error(), "read-only for every tool") || c.wantInMessage != "" && k.refused && !strings.Contains(err.Error(), c.wantInMessage):
				t.Errorf("%s(%s in %s) = %v, want a message with %q saying why", k.what, c.name, root, err, c.wantInMessage)
			}
		}
	}
}

// FuzzProtectedCheck holds CheckWrite and CheckRename to the rule stated
// element by element: a name (cleaned, root-relative, as a scope
// resolves it) is refused when its first element folds to .git, when it
// folds to capkit.toml or the host's entry, or (CheckRename) when it
// holds the host's entry.
func FuzzProtectedCheck(f *testing.F) {
	for _, s := range []string{".git", ".git/hooks/pre-commit", ".GIT/config", "capkit.toml", "Capkit.TOML", "a/.git", ".github/x",
		"conf", "conf/secret.yaml", "conf/secret.yaml/x", "conf2/secret.yaml", ".gitignore", "capkit.toml.bak", "x/capkit.toml"} {
		f.Add(s)
	}
	const root = "/srv/r"
	p := NewProtected("conf/secret.yaml")
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || name != path.Clean(name) || path.IsAbs(name) || name == "." || strings.HasPrefix(name, "../") || name == ".." {
			return
		}
		elems := strings.Split(name, "/")
		entry := []string{"conf", "secret.yaml"}
		folds := func(a, b []string) bool { // a starts with b, element by element
			if len(a) < len(b) {
				return false
			}
			for i := range b {
				if !strings.EqualFold(a[i], b[i]) {
					return false
				}
			}
			return true
		}
		write := strings.EqualFold(elems[0], ".git") || folds(elems, []string{"capkit.toml"}) || folds(elems, entry)
		rename := write || folds(entry, elems)
		if got := p.CheckWrite([]string{root}, root, name) != nil; got != write {
			t.Errorf("CheckWrite(%q) refused %v, want %v", name, got, write)
		}
		if got := p.CheckRename([]string{root}, root, name) != nil; got != rename {
			t.Errorf("CheckRename(%q) refused %v, want %v", name, got, rename)
		}
	})
}

// TestProtectedConfiguredRoots: a set that knows the host's roots (a
// root nested in another, an absolute entry naming it) holds their
// protected paths whatever roots a check is given: one root alone, or a
// root narrowed to a directory inside a configured one.
func TestProtectedConfiguredRoots(t *testing.T) {
	p := NewProtected("scripts/deploy.sh", "/w/a/sub").WithRoots("/w/a", "/w/a/sub")
	for _, c := range []struct {
		roots   []string // roots[0] is the root the name is in
		name    string
		refused bool
	}{
		{[]string{"/w/a"}, "sub/.git/hooks/pre-commit", true},
		{[]string{"/w/a"}, "sub/capkit.toml", true},
		{[]string{"/w/a"}, "sub/scripts/deploy.sh", true},
		{[]string{"/w/a"}, "sub/x", false}, // an absolute entry naming a root leaves it writable
		{[]string{"/w/a/sub"}, "x", false},
		{[]string{"/w/a/scripts"}, "deploy.sh", true},
		{[]string{"/w/a/scripts"}, "scripts/deploy.sh", false},
		{[]string{"/w/a/.git"}, "hooks/pre-commit", true},
		{[]string{"/w/a/.git"}, "config", true},
		{[]string{"/w/a/src"}, "main.go", false},
	} {
		err := p.CheckWrite(c.roots, c.roots[0], c.name)
		if got := fault.CodeOf(err) == fault.Denied; got != c.refused || !c.refused && err != nil {
			t.Errorf("CheckWrite(%s in %s) = %v, want refused %v", c.name, c.roots[0], err, c.refused)
		}
	}
	if got, want := p.Paths([]string{"/w/a"}), []string{
		"/w/a/.git", "/w/a/capkit.toml", "/w/a/scripts/deploy.sh",
		"/w/a/sub/.git", "/w/a/sub/capkit.toml", "/w/a/sub/scripts/deploy.sh",
	}; !slices.Equal(got, want) {
		t.Errorf("Paths(/w/a) = %q, want %q (the nested root's, never the root)", got, want)
	}
	if got, want := p.Paths([]string{"/w/a/scripts"}), []string{"/w/a/scripts/deploy.sh"}; !slices.Equal(got, want) {
		t.Errorf("Paths(/w/a/scripts) = %q, want %q (where the entry is in the configured root)", got, want)
	}
	if got := p.Paths([]string{"/w/a/.git"}); len(got) != 0 {
		t.Errorf("Paths(/w/a/.git) = %q, want none (the root is protected whole: Covers)", got)
	}
	for dir, want := range map[string]bool{
		"/w/a/.git": true, "/w/a/.git/hooks": true, "/w/a/sub/.GIT": true, "/w/a/scripts/deploy.sh": true,
		"/w/a": false, "/w/a/sub": false, "/w/a/scripts": false, "/elsewhere": false,
	} {
		if got := p.Covers(dir); got != want {
			t.Errorf("Covers(%s) = %v, want %v", dir, got, want)
		}
	}
}
