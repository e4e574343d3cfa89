package tools

import (
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var listDescription = fmt.Sprintf(`Lists a directory: one entry a line, in name order, directories with a trailing /, symbolic links marked @, other special files marked (special file). offset skips that many entries and limit shows at most that many (default and at most %d); the order is stable, so offset pages through a directory: the result says how many entries there are and the offset to continue with. details: true adds each entry's type, size, permissions and modification time. A listing that would exceed the tool's output bound (%d bytes by default) ends on the last whole entry that fits and says so. Without a path, lists the first writable root (where relative paths start; list_roots lists every root and its mode); a path in any root may be given absolute.
Example: {"path": "src", "offset": 1000, "details": true}`, limits.ListMaxEntries, limits.ToolTextBytes)

// walker applies the walk rules shared by glob and grep: .git is skipped,
// depth and file count are bounded.
type walker struct {
	base    string
	files   int
	stopped bool
}

// visit returns info's path relative to the walk base, its depth (0 for
// the base itself), and SkipDir/SkipAll when the walk must not go on
// there.
func (w *walker) visit(info files.Info) (rel string, depth int, skip error) {
	switch {
	case info.Name == w.base:
		rel = ""
	case w.base == ".":
		rel = info.Name
	default:
		rel = strings.TrimPrefix(info.Name, w.base+"/")
	}
	if rel != "" {
		depth = strings.Count(rel, "/") + 1
	}
	if w.files++; w.files > limits.WalkMaxFiles {
		w.stopped = true
		return rel, depth, iofs.SkipAll
	}
	if info.IsDir() && path.Base(info.Name) == ".git" {
		return rel, depth, iofs.SkipDir
	}
	return rel, depth, nil
}
