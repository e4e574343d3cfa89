package tools

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

const moveDescription = `Moves or renames a file or directory inside one root, creating missing parent directories of the destination. It never replaces anything: if the destination exists the result is a conflict and nothing moves. Symbolic links and special files are not moved. After a move, read the file at its new path before editing it.
Example: {"source": "src/old_name.go", "destination": "src/pkg/new_name.go"}`

// MoveArgs are move_file's arguments.
type MoveArgs struct {
	Source      string `json:"source" jsonschema:"the file or directory to move"`
	Destination string `json:"destination" jsonschema:"its new path; must not exist"`
}

// MoveResult reports a move.
type MoveResult struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

func (r MoveResult) ToolText() string { return "moved " + r.Source + " to " + r.Destination }

func (x *executor) moveFile(ctx context.Context, req request, in MoveArgs) (MoveResult, error) {
	caps := req.caps
	from, err := x.resolveRename(caps, capability.MoveFile, in.Source)
	if err != nil {
		return MoveResult{}, err
	}
	defer from.Close()
	to, err := x.resolveRename(caps, capability.MoveFile, in.Destination)
	if err != nil {
		return MoveResult{}, err
	}
	defer to.Close()
	if from.root != to.root {
		return MoveResult{}, fault.New(fault.InvalidInput, "source and destination are in different roots; move_file moves inside one root")
	}
	if err := x.provider.Move(ctx, from.Target, to.Target); err != nil {
		return MoveResult{}, err
	}
	return MoveResult{Source: from.display, Destination: to.display}, nil
}
