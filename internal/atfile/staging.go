package atfile

import (
	"crypto/rand"
	"strings"

	"github.com/capkit/capkit/fault"
)

// StagingPrefix starts every name in the staging namespace: the files and
// directories capkit writes before it renames them into place (an atomic
// replacement's new content, a copy, an archive, an extraction). The
// namespace is reserved: every listing, walk, stat, read, copy and archive
// step leaves such names out or refuses them, and no tool may create one,
// so a staging file left by a crash is never served.
const StagingPrefix = ".capkit-tmp-"

// ErrReserved is the cause of the refusal of a name in the staging
// namespace.
var ErrReserved = fault.NewMark("atfile: name in the reserved staging namespace")

// StagingName returns a fresh, unpredictable name in the staging
// namespace: StagingPrefix, role ("write", "copy", "zip"...), "-", and a
// random part (crypto/rand) no other writer can guess.
func StagingName(role string) string {
	return StagingPrefix + role + "-" + strings.ToLower(rand.Text())
}

// IsStaging reports whether the single path element name is in the
// staging namespace.
func IsStaging(name string) bool { return strings.HasPrefix(name, StagingPrefix) }

// HasStagingElement reports whether any element of the slash-separated
// name is in the staging namespace.
func HasStagingElement(name string) bool {
	return strings.HasPrefix(name, StagingPrefix) || strings.Contains(name, "/"+StagingPrefix)
}

// Reserved is the refusal of a name in the staging namespace.
func Reserved(name string) *fault.Error {
	return fault.Wrap(fault.InvalidInput, ErrReserved,
		"%s: names starting with %q are reserved for capkit's staging files (content being written); choose another name", name, StagingPrefix)
}
