package testkit

import "testing"

func TestRepeated(t *testing.T) {
	for msg, want := range map[string]string{
		`destination refused: scheme "http": only https is fetched: destination refused: scheme "http": only https is fetched`: "destination refused",
		"state file is a FIFO, not a regular file: atfile: not a regular file":                                                 "not a regular file",
		"reading x failed: open /x: permission denied":                                                                         "",
		"fetch: HTTP 404 Not Found from https://example.com/":                                                                  "",
	} {
		if got := Repeated(msg); got != want {
			t.Errorf("Repeated(%q) = %q, want %q", msg, got, want)
		}
	}
}
