package tree

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is
// valid.
type ToolOptions struct {
	// Walk bounds tree_list; a model may ask for fewer entries or less
	// depth, never more. Zero fields mean the package defaults.
	Walk Options
	// Timeout bounds one call; zero means the kernel's default.
	Timeout time.Duration
}

// StampArgs are tree_stamp's arguments.
type StampArgs struct {
	Path string `json:"path" jsonschema:"file or directory to stamp, inside a listable root; \".\" is the root"`
}

// ToolText renders the stamp on one line, for the model and the CLI.
func (r Stamp) ToolText() string {
	return fmt.Sprintf("%s mode %04o size %d mtime %s ctime %s inode %d", r.Type, uint32(r.Mode.Perm()), r.Size,
		r.ModTime.UTC().Format(time.RFC3339Nano), r.ChangeTime.UTC().Format(time.RFC3339Nano), r.Inode)
}

// ListArgs are tree_list's arguments.
type ListArgs struct {
	Path       string `json:"path" jsonschema:"directory to list, inside a listable root; \".\" is the root"`
	MaxEntries int    `json:"max_entries,omitempty" jsonschema:"stop the overview after this many names; default and maximum: the host's bound"`
	MaxDepth   int    `json:"max_depth,omitempty" jsonschema:"list this many levels, not expanding the directories at the last; default and maximum: the host's bound"`
}

// ListResult is tree_list's result: counts as JSON, the entries as text.
type ListResult struct {
	Files            int   `json:"files"`
	Dirs             int   `json:"dirs"`
	Bytes            int64 `json:"bytes"`
	ExcludedSymlinks int   `json:"excluded_symlinks"`
	ExcludedSpecial  int   `json:"excluded_special"`
	// Cut reports that the overview stopped at max_entries or the output
	// bound; UnexpandedDirs counts directories at max_depth not expanded.
	Cut            bool `json:"cut"`
	UnexpandedDirs int  `json:"unexpanded_dirs"`
	text           string
}

// ToolText is what the model reads: one line per entry.
func (r ListResult) ToolText() string { return r.text }

// Text renders a listing as lines "TYPE MODE SIZE MTIME PATH" (directories
// end in "/") followed by a summary line.
func (l *Listing) Text() string {
	var b strings.Builder
	for _, e := range l.Entries {
		b.WriteString(e.line())
	}
	b.WriteString(l.summary())
	return b.String()
}

// RegisterTools registers tree_stamp and tree_list, both deferred with
// effect list. Paths are resolved in the scope of the roots the session's
// capabilities grant list on (internal/scope), so no path leads out of a
// granted root. opts may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	bounds, err := o.Walk.resolved()
	if err != nil {
		return fmt.Errorf("tree: tool options: %w", err)
	}
	err = kernel.AddTool(b, kernel.Policy{Name: "tree_stamp", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.List,
			Title:   "File metadata stamp",
			Summary: "Metadata stamp of a file or directory: type, size, mode, times, inode",
			Description: `Returns the metadata of one file or directory without reading it: type, size, permission bits, modification and change times, inode. A symbolic link is stamped, never followed. Stamp a path twice to tell whether it changed.
Example: {"path": "build/output.bin"}`,
		},
		func(ctx context.Context, call *kernel.Call, in StampArgs) (Stamp, error) {
			t, err := resolve(call, in.Path)
			if err != nil {
				return Stamp{}, err
			}
			defer t.Close()
			return stampTarget(t)
		})
	if err != nil {
		return err
	}
	return kernel.AddTool(b, kernel.Policy{Name: "tree_list", Timeout: o.Timeout, MaxOutputBytes: limits.ToolTextBytes},
		kernel.Meta{
			Effect:  capability.List,
			Title:   "List directory tree",
			Summary: "List every file and directory below a directory, with sizes and times; symlinks and special files left out",
			Description: fmt.Sprintf(`Lists the files and directories below a directory, depth first: one line "TYPE MODE SIZE MTIME PATH" each (TYPE f or d; directories end in "/"), then a summary. Symbolic links and special files are left out and counted; links are never followed.
It is an overview: it stops after %d names and goes %d levels deep (max_entries and max_depth may lower them), and says so in its summary line (the directories at the last level are listed, not expanded); the listing also stops within the tool's output bound. Only a tree whose files hold more than %d bytes fails ("limit").
Example: {"path": "src", "max_depth": 2}`, bounds.MaxEntries, bounds.MaxDepth, bounds.MaxBytes),
		},
		func(ctx context.Context, call *kernel.Call, in ListArgs) (ListResult, error) {
			walk := bounds
			var err error
			if walk.MaxEntries, err = lower("max_entries", in.MaxEntries, bounds.MaxEntries); err != nil {
				return ListResult{}, err
			}
			if walk.MaxDepth, err = lower("max_depth", in.MaxDepth, bounds.MaxDepth); err != nil {
				return ListResult{}, err
			}
			t, err := resolve(call, in.Path)
			if err != nil {
				return ListResult{}, err
			}
			defer t.Close()
			d, _, err := t.OpenTree("directory")
			if err != nil {
				return ListResult{}, err
			}
			defer d.Close()
			l, err := overview(ctx, d, walk, int(call.MaxOutputBytes)-listReserveBytes)
			if err != nil {
				return ListResult{}, err
			}
			return ListResult{Files: l.Files, Dirs: l.Dirs, Bytes: l.Bytes,
				ExcludedSymlinks: l.ExcludedSymlinks, ExcludedSpecial: l.ExcludedSpecial,
				Cut: l.Cut, UnexpandedDirs: l.Unexpanded, text: l.Text()}, nil
		})
}

// resolve is the target p names in the roots granted list.
func resolve(call *kernel.Call, p string) (*scope.Target, error) {
	return scope.New(call.Session.Capabilities(), capability.List, capability.Protected{}).Resolve(p)
}

// listReserveBytes is kept free of tree_list's text for its structured
// content.
const listReserveBytes = 1024

// lower applies a model's optional bound under the host's: asking for
// more is refused, not clamped.
func lower(what string, asked, bound int) (int, error) {
	switch {
	case asked == 0:
		return bound, nil
	case asked < 0:
		return 0, fault.New(fault.InvalidInput, "%s must be positive", what)
	case asked > bound:
		return 0, fault.New(fault.Limit, "%s %d exceeds this tool's bound of %d", what, asked, bound)
	}
	return asked, nil
}
