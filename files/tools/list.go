package tools

import (
	"fmt"
	iofs "io/fs"
	"path"
	"strings"

	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/limits"
)

var listDescription = fmt.Sprintf(`Lists a directory (default: the first root) in name order: directories end in /, symbolic links in @. Up to %d entries (the default) from offset; the result gives the total and the offset to continue from. details adds type, size, permissions and mtime.`, limits.ListMaxEntries)

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
