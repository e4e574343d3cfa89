package fault

import (
	"fmt"
	"math"
)

// Report is the machine-readable form of a failure that every front door
// gives its callers: the CLI's --json failure object and the copy an MCP
// failure result carries in _meta. One shape, so a caller parses both the
// same way.
type Report struct {
	Code    Code   `json:"code"`
	Message string `json:"message"`
	// RetryAfterSeconds, when present, is when a retry may be admitted:
	// RetryAfter rounded up to whole seconds.
	RetryAfterSeconds int64 `json:"retry_after_seconds,omitzero"`
	// Detail, when present, is content of the failed call the caller
	// needs to act on it (Error.Detail).
	Detail string `json:"detail,omitzero"`
}

// Report returns e's report. A trusted reader gets the message with its
// cause (Error); anyone else the public message (Public).
func (e *Error) Report(trusted bool) Report {
	r := Report{Code: e.Code, Message: e.Public(), Detail: e.Detail}
	if trusted {
		r.Message = e.Error()
	}
	if e.RetryAfter > 0 {
		r.RetryAfterSeconds = int64(math.Ceil(e.RetryAfter.Seconds()))
	}
	return r
}

// Text is the report for a model or a person: one line, "code: message"
// and the retry hint when there is one, then the detail on the lines
// after it when there is one.
func (r Report) Text() string {
	text := string(r.Code) + ": " + r.Message
	if r.RetryAfterSeconds > 0 {
		text += fmt.Sprintf(" (retry after %ds)", r.RetryAfterSeconds)
	}
	if r.Detail != "" {
		text += "\n" + r.Detail
	}
	return text
}
