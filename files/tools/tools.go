// Package tools is the model-facing file tools and their executor:
// read_file, read_files, write_file, edit_file, list_dir, dir_tree,
// file_info, create_directory, glob, grep and move_file.
//
// The executor resolves every path once in the scope of the roots the
// session's capabilities grant the tool's effect on (internal/scope:
// relative paths start at the first of them; a path under a root where
// only other effects are granted, such as a write under a read-only root,
// is denied), does the IO through a files.Provider on that target, owns
// read windowing, and dispatches the policy
// events of the files seam: the write and edit expectations before a
// mutation and an observation after every successful read, write or edit.
// The policy itself (read-before-edit, version-guarded writes) is the
// files/policy plugin, which the host attaches to the Events it passes in;
// the tools never import it. A path a tool would change that is protected
// (ToolOptions.Protected: .git, capkit.toml, the host's entries) is denied
// before the policy is asked, on the directory the change is then made
// through (scope.Target.CheckWrite).
//
// Written by hand: the windowed numbering, the edit matcher and its diff
// are specific to these tools. Globs and .gitignore rules are compiled
// here to the standard library's RE2, which matches in linear time:
// doublestar's and go-git's matchers backtrack, exponentially on hostile
// patterns, inside calls no context can interrupt. grep's literal
// prefilter, streaming scanner and worker pool are here too; regular
// expressions are RE2.
package tools

import (
	"context"
	"fmt"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/files/local"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/kernel/toolkit"
	"github.com/capkit/capkit/limits"
)

// The tool names.
const (
	ReadFile  = "read_file"
	WriteFile = "write_file"
	EditFile  = "edit_file"
	ListDir   = "list_dir"
	Glob      = "glob"
	Grep      = "grep"
	MoveFile  = "move_file"
	ReadFiles = "read_files"
	DirTree   = "dir_tree"
	FileInfo  = "file_info"
	MakeDir   = "create_directory"
	ListRoots = "list_roots"
)

// toolNames are every tool RegisterTools registers.
var toolNames = []string{ReadFile, ReadFiles, WriteFile, EditFile, ListDir, DirTree, FileInfo, MakeDir, Glob, Grep, MoveFile, ListRoots}

// ToolOptions configure RegisterTools. Policies are the host's to
// override (kernel.Options.PolicyOverride); DefaultPolicy is each tool's
// own.
type ToolOptions struct {
	// Provider does the IO; nil means a new local provider (files/local).
	Provider files.Provider
	// Events is the policy seam the tools dispatch on, with the host's
	// gates attached (the host attaches files/policy: read before edit,
	// no lost update). Required unless DisableGate is set.
	Events *files.Events
	// DisableGate lets the tools run on a seam with no gate when Events
	// is nil. Risk: the tools then overwrite and edit files the session
	// never read and files that changed since it read them (by the user,
	// another session or another program), silently discarding those
	// changes; only each single edit stays atomic against changes made
	// during that call.
	DisableGate bool
	// Protected are the paths no tool may change (the zero value: .git
	// and capkit.toml in every root); the host passes its configured set.
	Protected capability.Protected
}

// ErrNoGate is returned by RegisterTools when ToolOptions.Events is nil and
// DisableGate is not set.
var ErrNoGate = fault.NewMark("file tools: no file policy: pass ToolOptions.Events with files/policy attached, or set DisableGate")

// DefaultPolicy is each tool's own policy (the host may override it):
// bounds that suit `capkit serve`. The tools that show file content or
// listings return at most limits.ToolTextBytes (a window that would exceed
// it ends on a whole line and says where to go on; a host raises it per
// tool with MaxOutputBytes); write_file and edit_file accept content up to
// limits.WriteMaxBytes.
func DefaultPolicy(tool string) kernel.Policy {
	p := kernel.Policy{Name: tool}
	switch tool {
	case ReadFile, ReadFiles, ListDir, DirTree, FileInfo:
		p.MaxCalls = limits.FileToolsReadMaxCalls
		p.MaxOutputBytes = limits.ToolTextBytes
	case WriteFile, EditFile:
		p.MaxCalls = limits.FileToolsWriteMaxCalls
		p.MaxInputBytes = limits.FileToolsWriteInputBytes
		p.MaxOutputBytes = limits.ToolTextBytes
	case Glob, Grep:
		p.MaxCalls = limits.FileToolsReadMaxCalls
	case MoveFile, MakeDir:
		p.MaxCalls = limits.FileToolsWriteMaxCalls
		p.MaxOutputBytes = limits.ToolTextBytes
	}
	return p
}

// RegisterTools registers the file tools on b. read_file, write_file,
// edit_file, list_dir, glob, grep and list_roots are hot; read_files, dir_tree,
// file_info, create_directory and move_file are deferred (found through
// tool_search).
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	x, err := newExecutor(opts)
	if err != nil {
		return err
	}
	// Both steps register all their tools, in the order they are listed;
	// the first failure is returned.
	return firstError(registerHot(b, x), registerDeferred(b, x))
}

// newExecutor is the executor opts describe: their provider or a local
// one, and their events, which must have a gate unless DisableGate.
func newExecutor(opts *ToolOptions) (*executor, error) {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	x := &executor{provider: o.Provider, events: o.Events, protected: o.Protected}
	if x.provider == nil {
		x.provider = local.New()
	}
	if x.events == nil {
		if !o.DisableGate {
			return nil, ErrNoGate
		}
		x.events = files.NewEvents()
	}
	return x, nil
}

// registerHot registers the tools listed without discovery.
func registerHot(b *kernel.Builder, x *executor) error {
	policy := DefaultPolicy
	return firstError(
		kernel.AddTool(b, policy(ReadFile), kernel.Meta{
			Effect: capability.ReadFile, Hot: true, Title: "Read file",
			Summary:     "Read a text file as numbered lines, a window at a time (or its last lines), or an image.",
			Description: readDescription,
		}, adapt(x.readFile)),
		kernel.AddTool(b, policy(WriteFile), kernel.Meta{
			Effect: capability.WriteFile, Hot: true, Title: "Write file",
			Summary:     "Create a file, or replace one this session has read.",
			Description: writeDescription,
		}, adapt(x.writeFile)),
		kernel.AddTool(b, policy(EditFile), kernel.Meta{
			Effect: capability.EditFile, Hot: true, Title: "Edit file",
			Summary:     "Replace exact strings in a file this session has read, all edits or none; dry run shows the diff.",
			Description: editDescription,
		}, adapt(x.editFile)),
		kernel.AddTool(b, policy(ListDir), kernel.Meta{
			Effect: capability.List, Hot: true, Title: "List directory",
			Summary:     "List a directory a page at a time, optionally with sizes, permissions and times.",
			Description: listDescription,
		}, adapt(x.listDir)),
		kernel.AddTool(b, policy(Glob), kernel.Meta{
			Effect: capability.List, Hot: true, Title: "Find files by pattern",
			Summary:     "Find files by name pattern (** for any depth), newest first.",
			Description: globDescription,
		}, x.globTool),
		kernel.AddTool(b, policy(Grep), kernel.Meta{
			Effect: capability.Search, Hot: true, Title: "Search file contents",
			Summary:     "Search file contents (regexp or literal) as lines, files or counts.",
			Description: grepDescription,
		}, x.grepTool),
		kernel.AddTool(b, policy(ListRoots), kernel.Meta{
			Effect: capability.List, Hot: true, Title: "List roots",
			Summary:     "List the directories the file tools reach, with their modes.",
			Description: rootsDescription,
		}, adapt(x.listRoots)),
	)
}

// registerDeferred registers the tools found through tool_search.
func registerDeferred(b *kernel.Builder, x *executor) error {
	policy := DefaultPolicy
	return firstError(
		kernel.AddTool(b, policy(MoveFile), kernel.Meta{
			Effect: capability.MoveFile, Title: "Move file",
			Summary:     "Move or rename a file or directory, never replacing anything.",
			Description: moveDescription,
		}, adapt(x.moveFile)),
		kernel.AddTool(b, policy(ReadFiles), kernel.Meta{
			Effect: capability.ReadFile, Title: "Read several files",
			Summary:     "Read several text files in one call, each with its own window.",
			Description: readFilesDescription,
		}, adapt(x.readFiles)),
		kernel.AddTool(b, policy(DirTree), kernel.Meta{
			Effect: capability.List, Title: "Directory tree",
			Summary:     "Show a directory tree as an overview, bounded in depth and entries.",
			Description: treeDescription,
		}, adapt(x.dirTree)),
		kernel.AddTool(b, policy(FileInfo), kernel.Meta{
			Effect: capability.List, Title: "File information",
			Summary:     "File information: type, size, permissions and modification time (stat).",
			Description: infoDescription,
		}, adapt(x.fileInfo)),
		kernel.AddTool(b, policy(MakeDir), kernel.Meta{
			Effect: capability.WriteFile, Title: "Create directory",
			Summary:     "Create a directory and its missing parents (mkdir -p).",
			Description: mkdirDescription,
		}, adapt(x.createDirectory)),
	)
}

// firstError is the first of errs that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var (
	_ kernel.Releaser = ReadResult{}
	_ kernel.Imager   = ReadResult{}
)

// grepTool cuts the page a search collected to whole entries that fit the
// call's output bound with the summary.
func (x *executor) grepTool(ctx context.Context, call *kernel.Call, in GrepArgs) (GrepResult, error) {
	page, err := adapt(x.grep)(ctx, call, in)
	if err != nil {
		return GrepResult{}, err
	}
	return fitPage(call, page.collected(), page.pending(), page.result,
		fmt.Sprintf("entry %d of the search", page.counts.Offset+1), "an entry is never shown in part: narrow the search or ask for less context")
}

// globTool cuts the page a glob found to whole paths that fit the call's
// output bound with the summary.
func (x *executor) globTool(ctx context.Context, call *kernel.Call, in GlobArgs) (GlobResult, error) {
	page, err := adapt(x.glob)(ctx, call, in)
	if err != nil {
		return GlobResult{}, err
	}
	return fitPage(call, len(page.paths), len(page.paths) > 0, page.result,
		fmt.Sprintf("path %d", page.counts.Offset+1), "a path is never shown in part")
}

// fitPage is result(n) for the most of a page's n entries that fit the
// call's output bound beside the summary, which grows with the numbers it
// names; pending entries of which none fits fail with limit, first naming
// the first of them.
func fitPage[R any](call *kernel.Call, entries int, pending bool, result func(int) R, first, narrow string) (R, error) {
	var zero R
	n, err := toolkit.FitPrefix(call.MaxOutputBytes, entries, func(n int) any { return result(n) })
	switch {
	case err != nil:
		return zero, err
	case n == 0 && pending:
		return zero, toolkit.UnitTooLarge(call, first, 0, narrow)
	}
	return result(n), nil
}

// raiseOutputBound says how the host raises a tool's output bound.
func raiseOutputBound(tool string) string { return kernel.RaiseHint(tool, "max_output_bytes") }

// adapt turns a handler of a request into the kernel's handler shape.
func adapt[In, Out any](h func(context.Context, request, In) (Out, error)) func(context.Context, *kernel.Call, In) (Out, error) {
	return func(ctx context.Context, call *kernel.Call, in In) (Out, error) {
		r := request{maxOutput: call.MaxOutputBytes}
		if call.Tool != nil {
			r.tool = call.Tool.Name
		}
		if call.Session != nil {
			r.session, r.caps = call.Session, call.Session.Capabilities()
		}
		return h(ctx, r, in)
	}
}
