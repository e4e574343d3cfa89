// Package fault defines capkit's typed failure: every public operation
// returns a value or an *Error carrying one of a fixed set of codes, each with
// a stable CLI exit code. Failures never become truncated or substituted
// success.
//
// An Error separates what a caller may see (Code, Message, RetryAfter) from
// what only the host's trusted log may see (the wrapped cause, Err). Messages
// must be actionable and must not carry host paths or operating-system error
// text when the caller is untrusted; the kernel enforces the latter for io and
// internal failures by replacing the message with a generic one.
package fault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"
)

// Code classifies a failure. The zero value is not a valid code.
type Code string

// The failure codes. Their CLI exit codes are fixed: see ExitCode.
const (
	InvalidInput Code = "invalid_input"
	NotFound     Code = "not_found"
	Conflict     Code = "conflict"
	Denied       Code = "denied"
	Limit        Code = "limit"
	Unavailable  Code = "unavailable"
	Deferred     Code = "deferred"
	Integrity    Code = "integrity"
	IO           Code = "io"
	HTTP         Code = "http"
	TLS          Code = "tls"
	// Upstream is another MCP server's tool reporting its own failure
	// (an isError result): the message is that server's text.
	Upstream Code = "upstream"
	// Internal marks a bug in capkit or a handler: exit code 1.
	Internal Code = "internal"
)

// Codes lists every code in exit-code order, for documentation and tests.
var Codes = []Code{Internal, InvalidInput, NotFound, Conflict, Denied, Limit, Unavailable, Deferred, Integrity, IO, HTTP, TLS, Upstream}

// ExitCode is the stable process exit code for c. Unknown codes are internal
// failures (1).
func (c Code) ExitCode() int {
	switch c {
	case InvalidInput:
		return 2
	case NotFound:
		return 3
	case Conflict:
		return 4
	case Denied:
		return 5
	case Limit:
		return 6
	case Unavailable:
		return 7
	case Deferred:
		return 8
	case Integrity:
		return 9
	case IO:
		return 10
	case HTTP:
		return 11
	case TLS:
		return 12
	case Upstream:
		return 13
	}
	return 1
}

// Valid reports whether c is one of the defined codes.
func (c Code) Valid() bool {
	for _, k := range Codes {
		if k == c {
			return true
		}
	}
	return false
}

// Error is a typed failure.
type Error struct {
	Code Code
	// Message says what failed and what the caller can do about it.
	Message string
	// RetryAfter, when positive, is the interval after which a retry may be
	// admitted (deferred and unavailable failures). It is not a promise that
	// the retry will succeed.
	RetryAfter time.Duration
	// Err is the underlying cause: detail for the host's trusted log.
	Err error
	// Policy, for a denial or a limit, names the rule that decided it (a
	// setting such as max_calls=500, the effect a grant lacks) as the
	// audit trail records it: a name an operator looks up, never caller
	// text.
	Policy string
	// Detail is content of the failed call its caller needs to act on it
	// (the output a command printed before it was killed), as a result
	// would have shown it: the tool that sets it bounds it within the
	// call's output bound. Every front door shows it after the message,
	// to untrusted callers too; it is never logged or audited (Error
	// leaves it out).
	Detail string
}

// Error returns the message followed by the cause, for trusted readers,
// saying each once: a Mark cause is not repeated (it only classifies),
// nor is a cause whose text the message already holds (a typed cause
// whose rule or status the message states), nor the path of a
// *fs.PathError the message names.
func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = string(e.Code)
	}
	if e.Err == nil {
		return msg
	}
	if cause := causeText(e.Err, msg); cause != "" {
		return msg + ": " + cause
	}
	return msg
}

// causeText is what err adds to msg: nothing for a Mark or a text msg
// holds, and only the system's reason for a path msg names.
func causeText(err error, msg string) string {
	if _, ok := err.(*Mark); ok {
		return ""
	}
	if pe, ok := err.(*fs.PathError); ok && pe.Err != nil && strings.Contains(msg, pe.Path) {
		err = pe.Err
	}
	if cause := err.Error(); !strings.Contains(msg, cause) {
		return cause
	}
	return ""
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, fault.ErrLimit) true for every Error with that
// code. Only the sentinels (no message, no cause) match by code alone.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok || t.Message != "" || t.Err != nil {
		return false
	}
	return t.Code == e.Code
}

// Sentinels for errors.Is. Do not return them directly: wrap with New or
// Wrap so the caller gets a message.
var (
	ErrInvalidInput = &Error{Code: InvalidInput}
	ErrNotFound     = &Error{Code: NotFound}
	ErrConflict     = &Error{Code: Conflict}
	ErrDenied       = &Error{Code: Denied}
	ErrLimit        = &Error{Code: Limit}
	ErrUnavailable  = &Error{Code: Unavailable}
	ErrDeferred     = &Error{Code: Deferred}
	ErrIntegrity    = &Error{Code: Integrity}
	ErrIO           = &Error{Code: IO}
	ErrHTTP         = &Error{Code: HTTP}
	ErrTLS          = &Error{Code: TLS}
	ErrInternal     = &Error{Code: Internal}
)

// Mark is a sentinel cause for errors.Is that classifies a failure more
// finely than its code (a symbolic link, a file that changed) and says
// nothing the failure's message does not: wrapped as the cause, it is
// never repeated after the message. A message never formats its cause:
// Error appends what the cause adds.
type Mark struct{ text string }

// NewMark returns a Mark; text names it where it is printed alone.
func NewMark(text string) *Mark { return &Mark{text: text} }

func (m *Mark) Error() string { return m.text }

// With returns cause marked as m: errors.Is(err, m) holds, and it reads
// as cause alone.
func (m *Mark) With(cause error) error { return &marked{m, cause} }

type marked struct {
	m     *Mark
	cause error
}

func (e *marked) Error() string   { return e.cause.Error() }
func (e *marked) Unwrap() []error { return []error{e.m, e.cause} }

// New returns an Error with a formatted message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap returns an Error with a formatted message and a cause kept for the
// trusted log.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// RetryIn sets the interval after which a retry may be admitted and
// returns e: fault.New(fault.Unavailable, "...").RetryIn(time.Second).
func (e *Error) RetryIn(d time.Duration) *Error {
	e.RetryAfter = d
	return e
}

// By names the policy that decided e (Error.Policy) and returns e:
// fault.New(fault.Limit, "...").By("max_calls=500").
func (e *Error) By(policy string) *Error {
	e.Policy = policy
	return e
}

// WithDetail sets the content the caller is shown with e (Error.Detail)
// and returns e: fault.New(fault.Limit, "...").WithDetail(output).
func (e *Error) WithDetail(detail string) *Error {
	e.Detail = detail
	return e
}

// Restated is e told again in other words: a new failure of e's code,
// retry hint and detail (what its caller acts on) with a formatted
// message, and without e's cause or policy. For a reader that must not
// see e's message or cause (an untrusted session), or sees it placed (a
// script's position before it).
func (e *Error) Restated(format string, args ...any) *Error {
	return New(e.Code, format, args...).RetryIn(e.RetryAfter).WithDetail(e.Detail)
}

// LimitExceeded is the failure for a named bound: it states the limit and,
// when known, how much was asked for.
func LimitExceeded(what string, limit int64, got int64) *Error {
	if got > 0 {
		return New(Limit, "%s: %d exceeds the limit of %d", what, got, limit)
	}
	return New(Limit, "%s: exceeds the limit of %d", what, limit)
}

// OutputTooLarge is the failure for a result over a tool's output bound,
// worded one way everywhere: what was too large, its size when known (got
// 0 when the producer stopped early), the bound, and what to ask for
// instead. A result is never cut to fit.
func OutputTooLarge(what string, got, max int64, hint string) *Error {
	size := ""
	if got > 0 {
		size = fmt.Sprintf(" (%d bytes)", got)
	}
	return New(Limit, "%s%s exceeds this tool's output bound of %d bytes: %s", what, size, max, hint)
}

// As returns err as an *Error, classifying errors that are not one: context
// deadlines become limit, cancellation unavailable, missing files not_found,
// permission errors denied, existing files conflict, other filesystem errors
// io, and anything else internal. A nil err gives nil.
func As(err error) *Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return Wrap(Limit, err, "time limit exceeded")
	case errors.Is(err, context.Canceled):
		return Wrap(Unavailable, err, "canceled")
	case errors.Is(err, fs.ErrNotExist):
		return Wrap(NotFound, err, "not found")
	case errors.Is(err, fs.ErrPermission):
		return Wrap(Denied, err, "permission denied")
	case errors.Is(err, fs.ErrExist):
		return Wrap(Conflict, err, "already exists")
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return Wrap(IO, err, "i/o failure")
	}
	return Wrap(Internal, err, "internal error")
}

// CodeOf returns the code of err as classified by As, or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return As(err).Code
}

// ExitCode is the process exit code for err: 0 for nil.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	return As(err).Code.ExitCode()
}

// Public returns the message an untrusted caller may see: the message for
// most codes, and a generic text for io and internal failures, whose detail
// may name host paths or system errors.
func (e *Error) Public() string {
	switch e.Code {
	case IO:
		return "i/o failure"
	case Internal:
		return "internal error"
	}
	if e.Message == "" {
		return string(e.Code)
	}
	return e.Message
}
