package capability

import (
	"slices"
	"testing"
)

func TestNarrow(t *testing.T) {
	granted := Set{
		{Actor: "a", Effects: []Effect{ReadFile, List}, Scope: Scope{Roots: []string{"/w", "/ro"}, Resources: []string{"cat"}}},
		{Actor: "a", Effects: []Effect{WriteFile}, Scope: Scope{Roots: []string{"/w"}}},
	}
	cases := []struct {
		name   string
		within []string
		reads  []string
		writes []string
	}{
		{"same roots", []string{"/w", "/ro"}, []string{"/w", "/ro"}, []string{"/w"}},
		{"a parent keeps the root whole", []string{"/"}, []string{"/w", "/ro"}, []string{"/w"}},
		{"a subdirectory replaces the root", []string{"/w/sub"}, []string{"/w/sub"}, []string{"/w/sub"}},
		{"outside is dropped, never added", []string{"/etc", "/wx"}, nil, nil},
		{"only the read-only one", []string{"/ro/docs"}, []string{"/ro/docs"}, nil},
		{"nothing", nil, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := granted.Narrow(c.within)
			if r := got.Roots(ReadFile); !slices.Equal(r, c.reads) {
				t.Errorf("read roots %v, want %v", r, c.reads)
			}
			if r := got.Roots(WriteFile); !slices.Equal(r, c.writes) {
				t.Errorf("write roots %v, want %v", r, c.writes)
			}
			if !got.Grants(WriteFile) || !got.Covers(ReadFile, "cat") {
				t.Error("narrowing changed effects or resources")
			}
		})
	}
	if granted[0].Scope.Roots[0] != "/w" || len(granted[0].Scope.Roots) != 2 {
		t.Error("Narrow modified its receiver")
	}
}
