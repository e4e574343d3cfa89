package testkit

import (
	"log/slog"
	"strconv"
	"time"
)

// CallsStart is the time of the first record CallRecord makes.
var CallsStart = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// CallRecord is the kernel's audit record of call i, the mix the tests of
// the audit trail's sinks and readers count and filter: actor i%3 of
// actors; tool i%4 of read_file, grep, edit_file and glob; a denial
// (policy grant:write_file) where i%11 is 3, a limit (policy max_calls=5)
// where it is 7, not_found where it is 9, ok otherwise; session "s",
// request i, a duration of (i*37)%1000 µs, every apart from CallsStart;
// then extra. It is a record, not an event: audit.Encode makes the event.
func CallRecord(i int, every time.Duration, actors [3]string, extra ...slog.Attr) slog.Record {
	r := slog.NewRecord(CallsStart.Add(time.Duration(i)*every), slog.LevelInfo, "call", 0)
	outcome, policy := "ok", ""
	switch i % 11 {
	case 3:
		outcome, policy = "denied", "grant:write_file"
	case 7:
		outcome, policy = "limit", "max_calls=5"
	case 9:
		outcome = "not_found"
	}
	r.AddAttrs(slog.String("actor", actors[i%3]), slog.String("session", "s"),
		slog.String("request", strconv.Itoa(i)), slog.String("tool", []string{"read_file", "grep", "edit_file", "glob"}[i%4]),
		slog.String("outcome", outcome), slog.Int64("duration_us", int64((i*37)%1000)))
	if policy != "" {
		r.AddAttrs(slog.String("policy", policy))
	}
	r.AddAttrs(extra...)
	return r
}
