package capability

import (
	"slices"
	"strings"
	"testing"
)

func TestNewValidates(t *testing.T) {
	cases := []struct {
		name    string
		actor   string
		effects []Effect
		roots   []string
		ok      bool
	}{
		{"ok", "a", []Effect{ReadFile}, []string{"/x/y/"}, true},
		{"empty actor", "", []Effect{ReadFile}, nil, false},
		{"unknown effect", "a", []Effect{"fly"}, nil, false},
		{"relative root", "a", []Effect{ReadFile}, []string{"x"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cap, err := New(c.actor, c.effects, Scope{Roots: c.roots})
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if c.ok && cap.Scope.Roots[0] != "/x/y" {
				t.Errorf("root not cleaned: %q", cap.Scope.Roots[0])
			}
		})
	}
}

func TestSetRootsAndCovers(t *testing.T) {
	rw, _ := New("a", []Effect{ReadFile, WriteFile}, Scope{Roots: []string{"/w"}})
	ro, _ := New("a", []Effect{ReadFile}, Scope{Roots: []string{"/r"}, Resources: []string{"notes"}})
	s := Set{rw, ro}
	if got := s.Roots(ReadFile); len(got) != 2 || got[0] != "/w" || got[1] != "/r" {
		t.Errorf("Roots(read) = %v", got)
	}
	if got := s.Roots(WriteFile); len(got) != 1 || got[0] != "/w" {
		t.Errorf("Roots(write) = %v", got)
	}
	if s.Covers(WriteFile, "/r") {
		t.Error("write must not cover the read-only root")
	}
	if !s.Covers(ReadFile, "notes") || s.Covers(WriteFile, "notes") {
		t.Error("resource coverage wrong")
	}
	if s.Grants(RunShell) || !s.Grants(WriteFile) {
		t.Error("Grants wrong")
	}
}

func TestWithin(t *testing.T) {
	cases := []struct {
		root, p string
		want    bool
	}{
		{"/x/root", "/x/root", true},
		{"/x/root", "/x/root/a", true},
		{"/x/root", "/x/root_evil", false},
		{"/x/root", "/x/roo", false},
		{"/x/root", "/x", false},
		{"/", "/anything", true},
	}
	for _, c := range cases {
		if got := Within(c.root, c.p); got != c.want {
			t.Errorf("Within(%q,%q) = %v", c.root, c.p, got)
		}
	}
}

func TestEffectClasses(t *testing.T) {
	for _, e := range Effects() {
		if e.ReadOnly() && e.Destructive() {
			t.Errorf("%s is both read-only and destructive", e)
		}
		if _, err := ParseEffect(string(e)); err != nil {
			t.Error(err)
		}
	}
	if _, err := ParseEffect("teleport"); err == nil {
		t.Error("unknown effect parsed")
	}
}

func TestUpstreamEffects(t *testing.T) {
	for e, want := range map[Effect]string{
		"upstream:memory": "memory", "upstream:a": "a", "upstream:my-server2": "my-server2",
		Effect("upstream:" + strings.Repeat("a", 32)): strings.Repeat("a", 32),
	} {
		if name, ok := e.Upstream(); !ok || name != want || !e.Valid() {
			t.Errorf("%q: upstream %q %v, valid %v", e, name, ok, e.Valid())
		}
		if e.ReadOnly() || e.Destructive() || e.OpenWorld() {
			t.Errorf("%q carries hints; an upstream's tools carry their own", e)
		}
	}
	for _, e := range []Effect{"upstream:", "upstream:Memory", "upstream:a_b", "upstream:a__b", "upstream:9a", "upstream:-a",
		Effect("upstream:" + strings.Repeat("a", 33)), "upstream:a b", "upstreams:a", "upstream"} {
		if _, ok := e.Upstream(); ok || e.Valid() {
			t.Errorf("%q is taken as an upstream's effect", e)
		}
	}
	if Upstream("memory") != "upstream:memory" {
		t.Error(Upstream("memory"))
	}
	if slices.ContainsFunc(Effects(), func(e Effect) bool { _, ok := e.Upstream(); return ok }) {
		t.Error("Effects lists an upstream effect")
	}
}
