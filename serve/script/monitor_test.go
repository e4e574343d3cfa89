package script

import (
	"bytes"
	"testing"
)

// mayNameResourceRef is mayNameResource as its definition says: a
// backslash, or any of the keys anywhere.
func mayNameResourceRef(args []byte) bool {
	if bytes.ContainsRune(args, '\\') {
		return true
	}
	for _, k := range append([]string{"url"}, pathArgs...) {
		if bytes.Contains(args, []byte(`"`+k+`"`)) {
			return true
		}
	}
	return false
}

var mayNameResourceCases = []string{
	``, `{}`, `"`, `{"text":"item-1"}`, `{"path":"a"}`, `{"text":"path"}`, `{"text":"\"path\""}`,
	`{"pat":"h"}`, `{"paths":"x"}`, `{"u\u0072l":"x"}`, `{"url"`, `"url"`, `{"a":1,"file":2}`,
	`{"x":"dir"}`, `{"cwd":""}`, `{"root":"/"}`, `{"index":"i"}`, `{"archive":"z"}`, `{"source":"s"}`,
	`{"p":"","pa":"","pat":"","dir`, `["dir"]`, `{"text":"a","n":2}`,
}

func TestMayNameResource(t *testing.T) {
	for _, c := range mayNameResourceCases {
		if got, want := mayNameResource([]byte(c)), mayNameResourceRef([]byte(c)); got != want {
			t.Errorf("%s: %v, want %v", c, got, want)
		}
	}
	if !mayNameResource([]byte(`{"path":"a"}`)) || mayNameResource([]byte(`{"text":"item-1"}`)) {
		t.Fatal("the plain cases")
	}
}

func FuzzMayNameResource(f *testing.F) {
	for _, c := range mayNameResourceCases {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		if got, want := mayNameResource(args), mayNameResourceRef(args); got != want {
			t.Fatalf("%q: %v, want %v", args, got, want)
		}
	})
}
