package httpguard

import "testing"

func TestSplitHost(t *testing.T) {
	cases := []struct {
		in         string
		name, port string
		ok         bool
	}{
		{"localhost", "localhost", "", true},
		{"localhost:80", "localhost", "80", true},
		{"[::1]", "::1", "", true},
		{"[::1]:8080", "::1", "8080", true},
		{"[::1]8080", "", "", false},
		{"[::1", "", "", false},
		{"::1", "", "", false},
		{"", "", "", false},
		{":80", "", "", false},
		{"host:", "", "", false},
	}
	for _, c := range cases {
		name, port, ok := SplitHost(c.in)
		if name != c.name || port != c.port || ok != c.ok {
			t.Errorf("SplitHost(%q) = %q, %q, %v", c.in, name, port, ok)
		}
	}
}
