// Package clip bounds caller text echoed back in a message: at most
// limits.EchoMaxBytes, cut on a character boundary (never inside a UTF-8
// sequence), marked with "…" when cut, invalid UTF-8 replaced.
package clip

import (
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/limits"
)

// Text is s bounded for a message.
func Text(s string) string { return N(s, limits.EchoMaxBytes) }

// N is s cut to at most max bytes on a character boundary, with "…" added
// when anything was cut.
func N(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
