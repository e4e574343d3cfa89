package fault

import (
	"encoding/json"
	"testing"
	"time"
)

func TestReport(t *testing.T) {
	cause := New(IO, "reading /secret/x failed")
	cause.Err = errString("EIO")
	cases := []struct {
		name    string
		err     *Error
		trusted bool
		want    Report
		text    string
	}{
		{"plain", New(NotFound, "a.txt: not found"), false,
			Report{Code: NotFound, Message: "a.txt: not found"}, "not_found: a.txt: not found"},
		{"retry rounds up", &Error{Code: Deferred, Message: "busy", RetryAfter: 1500 * time.Millisecond}, false,
			Report{Code: Deferred, Message: "busy", RetryAfterSeconds: 2}, "deferred: busy (retry after 2s)"},
		{"whole seconds stay", &Error{Code: Unavailable, Message: "busy", RetryAfter: 3 * time.Second}, false,
			Report{Code: Unavailable, Message: "busy", RetryAfterSeconds: 3}, "unavailable: busy (retry after 3s)"},
		{"untrusted io is generic", cause, false,
			Report{Code: IO, Message: "i/o failure"}, "io: i/o failure"},
		{"trusted io has detail", cause, true,
			Report{Code: IO, Message: "reading /secret/x failed: EIO"}, "io: reading /secret/x failed: EIO"},
		{"detail after the line", New(Limit, "killed").RetryIn(time.Second).WithDetail("--- stdout ---\nhalf\n"), false,
			Report{Code: Limit, Message: "killed", RetryAfterSeconds: 1, Detail: "--- stdout ---\nhalf\n"}, "limit: killed (retry after 1s)\n--- stdout ---\nhalf\n"},
		{"detail to a trusted reader", New(Denied, "planted").WithDetail("out"), true,
			Report{Code: Denied, Message: "planted", Detail: "out"}, "denied: planted\nout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.err.Report(c.trusted)
			if got != c.want || got.Text() != c.text {
				t.Fatalf("Report = %+v %q, want %+v %q", got, got.Text(), c.want, c.text)
			}
		})
	}
	data, _ := json.Marshal(Report{Code: Limit, Message: "m"})
	if string(data) != `{"code":"limit","message":"m"}` {
		t.Errorf("encoding without a retry hint: %s", data)
	}
	data, _ = json.Marshal(New(Limit, "m").WithDetail("x").Report(false))
	if string(data) != `{"code":"limit","message":"m","detail":"x"}` {
		t.Errorf("encoding with a detail: %s", data)
	}
}

// TestDetailNotInError: the detail is the caller's content, never part
// of the text logs and audit events take (Error).
func TestDetailNotInError(t *testing.T) {
	e := Wrap(Limit, errString("cause"), "killed").WithDetail("secret output")
	if got := e.Error(); got != "killed: cause" {
		t.Fatalf("Error() = %q", got)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
