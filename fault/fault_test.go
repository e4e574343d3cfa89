package fault

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"
)

func TestExitCodes(t *testing.T) {
	want := map[Code]int{
		InvalidInput: 2, NotFound: 3, Conflict: 4, Denied: 5, Limit: 6, Unavailable: 7,
		Deferred: 8, Integrity: 9, IO: 10, HTTP: 11, TLS: 12, Internal: 1, Code("bogus"): 1,
	}
	for code, exit := range want {
		t.Run(string(code), func(t *testing.T) {
			if got := code.ExitCode(); got != exit {
				t.Errorf("ExitCode() = %d, want %d", got, exit)
			}
		})
	}
	if ExitCode(nil) != 0 {
		t.Error("nil error must exit 0")
	}
	if ExitCode(errors.New("plain")) != 1 {
		t.Error("an unclassified error is internal (1)")
	}
}

func TestIsAndAs(t *testing.T) {
	cause := &fs.PathError{Op: "open", Path: "/secret/x", Err: fs.ErrNotExist}
	err := fmt.Errorf("context: %w", Wrap(NotFound, cause, "file not found"))
	if !errors.Is(err, ErrNotFound) {
		t.Error("errors.Is must match the sentinel by code")
	}
	if errors.Is(err, ErrConflict) {
		t.Error("errors.Is must not match another code")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Error("errors.Is must reach the cause")
	}
	var fe *Error
	if !errors.As(err, &fe) || fe.Code != NotFound {
		t.Fatalf("errors.As = %v", fe)
	}
	if errors.Is(New(NotFound, "x"), New(NotFound, "x")) {
		t.Error("only sentinels match by code")
	}
}

func TestClassify(t *testing.T) {
	_, statErr := os.Stat("/nonexistent/capkit")
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"deadline", context.DeadlineExceeded, Limit},
		{"canceled", fmt.Errorf("x: %w", context.Canceled), Unavailable},
		{"not exist", statErr, NotFound},
		{"permission", fs.ErrPermission, Denied},
		{"exist", fs.ErrExist, Conflict},
		{"path error", &fs.PathError{Op: "read", Path: "p", Err: errors.New("EIO")}, IO},
		{"plain", errors.New("boom"), Internal},
		{"typed", New(TLS, "bad cert"), TLS},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CodeOf(c.err); got != c.want {
				t.Errorf("CodeOf = %q, want %q", got, c.want)
			}
		})
	}
	if CodeOf(nil) != "" || As(nil) != nil {
		t.Error("nil classifies to nothing")
	}
}

func TestPublicHidesDetail(t *testing.T) {
	e := Wrap(IO, errors.New("read /home/alice/secret: EIO"), "reading /home/alice/secret failed")
	if got := e.Public(); got != "i/o failure" {
		t.Errorf("Public() = %q", got)
	}
	if got := New(Conflict, "file changed since read").Public(); got != "file changed since read" {
		t.Errorf("Public() = %q", got)
	}
	if e.Error() == "" || !errors.Is(e, ErrIO) {
		t.Error("trusted text keeps the detail")
	}
}

// TestRestated: a failure told again keeps what its caller acts on (the
// code, the retry hint, the detail) and leaves the cause and the policy.
func TestRestated(t *testing.T) {
	e := Wrap(Limit, errors.New("cause"), "killed").RetryIn(2 * time.Second).By("run.timeout=1s").WithDetail("output")
	got := e.Restated("%s: %s", "1:2", e.Public())
	want := &Error{Code: Limit, Message: "1:2: killed", RetryAfter: 2 * time.Second, Detail: "output"}
	if *got != *want {
		t.Errorf("Restated = %+v, want %+v", got, want)
	}
}

func TestLimitExceeded(t *testing.T) {
	e := LimitExceeded("input bytes", 10, 11)
	if e.Code != Limit || e.Message != "input bytes: 11 exceeds the limit of 10" {
		t.Errorf("got %q", e.Message)
	}
}

func TestRetryIn(t *testing.T) {
	e := New(Unavailable, "busy").RetryIn(2 * time.Second)
	if e.RetryAfter != 2*time.Second || e.Code != Unavailable || e.Message != "busy" {
		t.Fatalf("%+v", e)
	}
}

// TestErrorSaysEachPartOnce: a cause is appended once, a Mark never, and a
// cause the message already states is not repeated.
func TestErrorSaysEachPartOnce(t *testing.T) {
	mark := NewMark("pkg: symbolic link")
	osErr := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrPermission}
	typed := errors.New(`destination refused: scheme "http"`)
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{Wrap(IO, osErr, "reading x failed"), "reading x failed: open /x: permission denied"},
		{Wrap(Denied, mark, "x is a symbolic link"), "x is a symbolic link"},
		{Wrap(Denied, mark.With(osErr), "x is a symbolic link"), "x is a symbolic link: open /x: permission denied"},
		{Wrap(Denied, typed, `destination refused: scheme "http"`), `destination refused: scheme "http"`},
		{Wrap(HTTP, errors.New("HTTP 404"), "fetch: HTTP 404 Not Found from u"), "fetch: HTTP 404 Not Found from u"},
		{Wrap(Limit, Wrap(Denied, mark, "inner"), "outer"), "outer: inner"},
		{New(Conflict, "plain"), "plain"},
		{Wrap(NotFound, osErr, "cannot open /x"), "cannot open /x: permission denied"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
	}
	if err := Wrap(Denied, mark.With(osErr), "m"); !errors.Is(err, mark) || !errors.Is(err, fs.ErrPermission) {
		t.Error("a marked cause must match both the mark and the cause")
	}
}
