// Package toolname is the rule for tool names, the catalog's and the
// gateway's alike: capkit's own tools are lower-case words joined by '_';
// the tools of other sources (another MCP server's, NAME__TOOL) may use
// what every MCP client accepts. Both are written by hand: a
// package-level regexp is compiled at every process start.
package toolname

// Valid reports whether name is a name of capkit's own tools:
// ^[a-z][a-z0-9_]{0,63}$.
func Valid(name string) bool {
	if len(name) == 0 || len(name) > 64 || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// ValidExternal reports whether name is a name a tool of another source
// may have: ^[A-Za-z][A-Za-z0-9_-]{0,63}$ (a letter, then letters,
// digits, '_' and '-', at most 64 bytes in all).
func ValidExternal(name string) bool {
	if len(name) == 0 || len(name) > 64 || !isLetter(name[0]) {
		return false
	}
	for _, c := range []byte(name) {
		if !(isLetter(c) || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
