package fixedfiles

import (
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// IDPattern is the grammar of a catalog identifier, as a regular
// expression. ValidID implements it without the regexp package (it runs on
// every call); a fuzz test holds the two to the same verdicts.
const IDPattern = `^[a-z0-9_-][a-z0-9_.-]{0,127}$`

// ValidID reports whether id is a well-formed identifier: 1 to 128 bytes of
// lower-case ASCII letters, digits, '_', '-' and '.', not starting with '.'.
// Identifiers are labels, never paths: no '/', no '..' prefix, no case
// folding.
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > limits.CatalogIDMaxBytes || id[0] == '.' {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// checkID returns an invalid_input fault wrapping ErrInvalidID for a
// malformed identifier. The identifier is not echoed: it may be long or
// hostile, and the host's own config names it anyway.
func checkID(id string) error {
	if ValidID(id) {
		return nil
	}
	return fault.Wrap(fault.InvalidInput, ErrInvalidID,
		"catalog identifier must match %s (1 to %d bytes of a-z, 0-9, '_', '-', '.', not starting with '.')",
		IDPattern, limits.CatalogIDMaxBytes)
}
