package tools

import (
	"context"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

const moveDescription = `Moves or renames a file or directory inside one root, creating missing parent directories of the destination. It never replaces anything: if the destination exists the result is a conflict and nothing moves. Symbolic links and special files are not moved. After a move, read the file at its new path before editing it.
Example: {"from": "src/old_name.go", "to": "src/pkg/new_name.go"}`

// MoveArgs are move_file's arguments.
type MoveArgs struct {
	From string `json:"from" jsonschema:"the file or directory to move"`
	To   string `json:"to" jsonschema:"its new path; must not exist"`
}

// MoveResult reports a move.
type MoveResult struct {
	From string `json:"from"`
	To   string `json:"to"`
}

func (r MoveResult) ToolText() string { return "moved " + r.From + " to " + r.To }

func (x *executor) moveFile(ctx context.Context, req request, in MoveArgs) (MoveResult, error) {
	caps := req.caps
	from, err := resolve(caps, capability.MoveFile, in.From)
	if err != nil {
		return MoveResult{}, err
	}
	to, err := resolve(caps, capability.MoveFile, in.To)
	if err != nil {
		return MoveResult{}, err
	}
	if from.root != to.root {
		return MoveResult{}, fault.New(fault.InvalidInput, "from and to are in different roots; move_file moves inside one root")
	}
	if err := x.provider.Move(ctx, from.root, from.name, to.name); err != nil {
		return MoveResult{}, err
	}
	return MoveResult{From: from.display, To: to.display}, nil
}
