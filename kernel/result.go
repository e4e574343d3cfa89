package kernel

import (
	"encoding/json"

	"github.com/capkit/capkit/catalog"
)

// Result is what a tool returns: text for the model and, optionally,
// structured content already encoded as a JSON object. Both count toward
// the output bound.
type Result struct {
	Text       string
	Structured json.RawMessage
}

// Size is the number of bytes the output bound is checked against.
func (r *Result) Size() int64 { return int64(len(r.Text) + len(r.Structured)) }

// Call is one admitted call, as a handler sees it.
type Call struct {
	Session *Session
	Tool    *catalog.Entry
	// Args are the validated, encoded arguments.
	Args json.RawMessage
	// MaxOutputBytes is the output bound; a handler that can tell early that
	// its result would exceed it should fail with limit before doing the
	// work.
	MaxOutputBytes int64
}
