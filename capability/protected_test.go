package capability

import (
	"slices"
	"testing"
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

// TestProtectedConfiguredRoots: a set that knows the host's roots (a
// root nested in another, an absolute entry naming it) holds their
// protected paths whatever roots a check is given: one root alone, or a
// root narrowed to a directory inside a configured one.
func TestProtectedConfiguredRoots(t *testing.T) {
	p := NewProtected("scripts/deploy.sh", "/w/a/sub").WithRoots("/w/a", "/w/a/sub")
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
