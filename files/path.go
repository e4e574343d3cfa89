package files

import "github.com/capkit/capkit/internal/atfile"

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
// (never expanded), trailing spaces or quotes (almost always a quoting
// mistake, and a way to name a look-alike file), and any element in the
// staging namespace (TempPrefix). Refused with denied: absolute paths
// outside every root and relative paths that climb out of the first root.
// Percent escapes are never decoded: "%2e%2e" is a file name.
func Resolve(roots []string, p string) (root, rel string, err error) {
	return atfile.Resolve(roots, p)
}
