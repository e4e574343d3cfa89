package scope

import (
	"path"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

// refuser is check c of p as a change in roots makes it, by name only.
func refuser(p capability.Protected, c check) func(roots []string, root, name string) error {
	return func(roots []string, root, name string) error { return In(roots, p).refuse(c, root, name) }
}

func TestRefuse(t *testing.T) {
	p := capability.NewProtected(".envrc", "/w/a/conf/app.ini")
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
		}{{refuser(p, writeCheck), c.write, "CheckWrite"}, {refuser(p, renameCheck), c.rename, "CheckRename"}} {
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

// FuzzRefuse holds the write and the rename check to the rule stated
// element by element: a name (cleaned, root-relative, as a scope
// resolves it) is refused when its first element folds to .git, when it
// folds to capkit.toml or the host's entry, or (the rename check) when it
// holds the host's entry.
func FuzzRefuse(f *testing.F) {
	for _, s := range []string{".git", ".git/hooks/pre-commit", ".GIT/config", "capkit.toml", "Capkit.TOML", "a/.git", ".github/x",
		"conf", "conf/secret.yaml", "conf/secret.yaml/x", "conf2/secret.yaml", ".gitignore", "capkit.toml.bak", "x/capkit.toml"} {
		f.Add(s)
	}
	const root = "/srv/r"
	p := capability.NewProtected("conf/secret.yaml")
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
		if got := refuser(p, writeCheck)([]string{root}, root, name) != nil; got != write {
			t.Errorf("CheckWrite(%q) refused %v, want %v", name, got, write)
		}
		if got := refuser(p, renameCheck)([]string{root}, root, name) != nil; got != rename {
			t.Errorf("CheckRename(%q) refused %v, want %v", name, got, rename)
		}
	})
}

// TestRefuseConfiguredRoots: a set that knows the host's roots (a root
// nested in another, an absolute entry naming it) holds their protected
// paths whatever roots a check is given: one root alone, or a root
// narrowed to a directory inside a configured one.
func TestRefuseConfiguredRoots(t *testing.T) {
	p := capability.NewProtected("scripts/deploy.sh", "/w/a/sub").WithRoots("/w/a", "/w/a/sub")
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
		err := refuser(p, writeCheck)(c.roots, c.roots[0], c.name)
		if got := fault.CodeOf(err) == fault.Denied; got != c.refused || !c.refused && err != nil {
			t.Errorf("CheckWrite(%s in %s) = %v, want refused %v", c.name, c.roots[0], err, c.refused)
		}
	}
}
