package atfile

import (
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Resolve maps a caller-supplied path onto one of roots (absolute, cleaned
// directories; the first is where relative paths start) and returns that
// root and the root-relative, slash-separated name to open through an
// os.Root for it.
//
// Resolve is lexical: it never touches the filesystem. It guarantees that
// the returned name, cleaned, names the root itself or something under it,
// so a caller that opens it through os.Root cannot leave the root by
// any path element, ".." or symlink (os.Root refuses those). It does not
// guarantee that the name exists or is a regular file.
//
// Refused with invalid_input: empty paths, NUL and other control bytes,
// invalid UTF-8, paths longer than limits.PathMaxBytes, a leading "~"
// (never expanded), and trailing spaces or quotes (almost always a
// quoting mistake, and a way to name a look-alike file), and any element
// in the staging namespace (StagingPrefix, reserved). Refused with
// denied: absolute paths outside every root and relative paths that climb
// out of the first root. Percent escapes are never decoded: "%2e%2e" is a
// file name.
func Resolve(roots []string, p string) (root, rel string, err error) {
	if len(roots) == 0 {
		return "", "", fault.New(fault.Denied, "no root is granted for this operation")
	}
	if err := checkPathText(p); err != nil {
		return "", "", err
	}
	if filepath.IsAbs(p) {
		c := filepath.Clean(p)
		best := ""
		for _, r := range roots {
			if capability.Within(r, c) && len(r) > len(best) {
				best = r
			}
		}
		if best == "" {
			return "", "", fault.New(fault.Denied, "path is outside the allowed roots")
		}
		rel, err := filepath.Rel(best, c)
		if err != nil {
			return "", "", fault.New(fault.Denied, "path is outside the allowed roots")
		}
		return checkStaging(best, filepath.ToSlash(rel))
	}
	c := filepath.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", "", fault.New(fault.Denied, "path climbs out of the root")
	}
	return checkStaging(roots[0], filepath.ToSlash(c))
}

// checkStaging refuses a root-relative name with an element in the staging
// namespace: no tool reads, lists or creates such a name.
func checkStaging(root, rel string) (string, string, error) {
	if HasStagingElement(rel) {
		return "", "", Reserved(rel)
	}
	return root, rel, nil
}

func checkPathText(p string) error {
	switch {
	case p == "":
		return fault.New(fault.InvalidInput, "path is empty")
	case len(p) > limits.PathMaxBytes:
		return fault.LimitExceeded("path bytes", limits.PathMaxBytes, int64(len(p)))
	case !utf8.ValidString(p):
		return fault.New(fault.InvalidInput, "path is not valid UTF-8")
	case p[0] == '~':
		return fault.New(fault.InvalidInput, "path starts with ~; home directories are not expanded: give a path inside the root")
	}
	for i := 0; i < len(p); i++ {
		if p[i] < 0x20 || p[i] == 0x7f {
			return fault.New(fault.InvalidInput, "path contains a control character at byte %d", i)
		}
	}
	switch last := p[len(p)-1]; last {
	case ' ', '"', '\'', '`':
		return fault.New(fault.InvalidInput, "path ends with %q; remove the stray character", last)
	}
	if strings.HasPrefix(p, " ") || strings.HasPrefix(p, "\"") || strings.HasPrefix(p, "'") {
		return fault.New(fault.InvalidInput, "path starts with a space or quote; remove the stray character")
	}
	return nil
}
