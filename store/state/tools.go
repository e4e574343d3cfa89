package state

import (
	"context"
	"fmt"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/kernel"
)

// ToolOptions configure the model-facing tools. A nil *ToolOptions is
// valid.
type ToolOptions struct {
	// MaxInputBytes bounds state_replace's arguments, so the state it can
	// write; zero means the kernel's default (limits.DefaultMaxInputBytes).
	MaxInputBytes int64
	// Timeout bounds one call; zero means the kernel's default.
	Timeout time.Duration
	// Events is the file tools' policy seam: state_replace offers every
	// replacement to its write gate and reports it to its observers, so a
	// state file is no way around the file policy (read before
	// overwrite). Pass the Events the file tools use; nil means no gate.
	Events *files.Events
	// Protected are the paths neither tool may create, replace or move
	// (the zero value: .git and capkit.toml in every root); the host
	// passes its set.
	Protected capability.Protected
}

// ReplaceArgs are state_replace's arguments.
type ReplaceArgs struct {
	Path    string `json:"path" jsonschema:"state file to replace or create, inside a root granted state_write"`
	Content string `json:"content" jsonschema:"the complete new content"`
}

// ReplaceResult is state_replace's result.
type ReplaceResult struct {
	Bytes int `json:"bytes"`
}

// ToolText is what the model reads.
func (r ReplaceResult) ToolText() string { return fmt.Sprintf("state replaced: %d bytes", r.Bytes) }

// PublishArgs are dir_publish's arguments.
type PublishArgs struct {
	Staging     string `json:"staging" jsonschema:"staged directory to publish, inside a root granted state_write"`
	Destination string `json:"destination" jsonschema:"new directory name in the same parent directory as staging; must not exist"`
}

// PublishResult is dir_publish's result.
type PublishResult struct {
	Published bool `json:"published"`
}

// ToolText is what the model reads.
func (r PublishResult) ToolText() string { return "directory published" }

// RegisterTools registers state_replace and dir_publish, both deferred
// with effect state_write. Paths are resolved in the scope of the roots the
// session's capabilities grant state_write on (internal/scope), so no path
// leads out of a granted root and no change reaches a protected path. opts
// may be nil.
func RegisterTools(b *kernel.Builder, opts *ToolOptions) error {
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	err := kernel.AddTool(b, kernel.Policy{Name: "state_replace", MaxInputBytes: o.MaxInputBytes, Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.StateWrite,
			Title:   "Replace state file",
			Summary: "Atomically replace (or create) a private state file with new content",
			Description: `Replaces the whole content of a state file atomically: after any crash the file holds the old or the new content, never a mix. Creates the file if it does not exist (private: mode 0600); an existing file keeps its permissions. Replacing an existing file follows the file tools' rule: the session must have read it with read_file, and it must not have changed since (else "conflict", nothing written). A path that is a symbolic link, directory or special file is refused. The content is bounded by this tool's input limit.
Example: {"path": "state/progress.json", "content": "{\"step\": 3}"}`,
		},
		func(ctx context.Context, call *kernel.Call, in ReplaceArgs) (ReplaceResult, error) {
			return replaceTool(ctx, call.Session, scope.New(call.Session.Capabilities(), capability.StateWrite, o.Protected), in, o.Events)
		})
	if err != nil {
		return err
	}
	return kernel.AddTool(b, kernel.Policy{Name: "dir_publish", Timeout: o.Timeout},
		kernel.Meta{
			Effect:  capability.StateWrite,
			Title:   "Publish directory",
			Summary: "Publish a staged directory under a new name, complete or not at all; never replaces",
			Description: `Renames a fully staged directory to its final name in one atomic step, after flushing its files to disk. The destination must not exist ("conflict" otherwise; nothing is replaced) and must be in the same parent directory as the staging directory ("invalid_input" otherwise).
Example: {"staging": "out/.report-staging", "destination": "out/report"}`,
		},
		func(ctx context.Context, call *kernel.Call, in PublishArgs) (PublishResult, error) {
			if err := publishTool(ctx, scope.New(call.Session.Capabilities(), capability.StateWrite, o.Protected), in); err != nil {
				return PublishResult{}, err
			}
			return PublishResult{Published: true}, nil
		})
}
