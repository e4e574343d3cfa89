package toolname

import (
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	for name, want := range map[string][2]bool{
		"a": {true, true}, "read_file": {true, true}, "a" + strings.Repeat("9", 63): {true, true}, "z_": {true, true},
		"": {false, false}, "a" + strings.Repeat("9", 64): {false, false}, "_a": {false, false}, "9a": {false, false},
		"A": {false, true}, "read-file": {false, true}, "readFile": {false, true}, "mem__Create-X": {false, true},
		"read file": {false, false}, "é": {false, false}, "a\n": {false, false}, "a.b": {false, false}, "a/b": {false, false},
		"-a": {false, false},
	} {
		if got := [2]bool{Valid(name), ValidExternal(name)}; got != want {
			t.Errorf("%q: Valid, ValidExternal = %v, want %v", name, got, want)
		}
	}
}

func FuzzNames(f *testing.F) {
	f.Add("mem__x")
	f.Fuzz(func(t *testing.T, name string) {
		if Valid(name) && !ValidExternal(name) {
			t.Errorf("%q is a capkit name but not an external one", name)
		}
		if ValidExternal(name) && (len(name) > 64 || strings.ContainsAny(name, " ./\x00")) {
			t.Errorf("%q accepted", name)
		}
	})
}
