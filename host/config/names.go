package config

// namePattern is a pattern of names: one byte of first, then at most max
// more of rest. It matches what its regular expression expr does, without
// compiling one at every process start (a counted repetition compiles to
// a program as long as its count).
type namePattern struct {
	expr        string
	first, rest string
	max         int
}

var (
	toolNamePattern  = namePattern{`^[a-z][a-z0-9_]{0,63}$`, lower, lower + digits + "_", 63}
	actorNamePattern = namePattern{`^[a-z][a-z0-9_-]{0,63}$`, lower, lower + digits + "_-", 63}
	resourcePattern  = namePattern{`^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,127}$`, letters + digits + "_", letters + digits + "_.:-", 127}
	envNamePattern   = namePattern{`^[A-Za-z_][A-Za-z0-9_]{0,127}$`, letters + "_", letters + digits + "_", 127}
)

const (
	lower   = "abcdefghijklmnopqrstuvwxyz"
	letters = lower + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits  = "0123456789"
)

// MatchString reports whether s is a name of the pattern.
func (p namePattern) MatchString(s string) bool {
	if len(s) == 0 || len(s) > 1+p.max || !inSet(p.first, s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !inSet(p.rest, s[i]) {
			return false
		}
	}
	return true
}

// String is the pattern as a regular expression, for messages.
func (p namePattern) String() string { return p.expr }

// inSet reports whether c is one of the ASCII bytes of set.
func inSet(set string, c byte) bool {
	for i := 0; i < len(set); i++ {
		if set[i] == c {
			return true
		}
	}
	return false
}
