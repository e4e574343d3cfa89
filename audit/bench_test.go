package audit

import (
	"context"
	"log/slog"
	"testing"
	"time"
)

// discard is a sink that keeps nothing.
type discard struct{}

func (discard) Write(*Event)                {}
func (discard) Close(context.Context) error { return nil }

// callRecord is a record as the kernel logs a read_file call.
func callRecord() slog.Record {
	r := slog.NewRecord(time.Now(), slog.LevelInfo, MsgCall, 0)
	r.AddAttrs(slog.String("actor", "assistant"), slog.String("session", "3f2a9c1e0b7d4a65"), slog.String("request", "1234"),
		slog.String("tool", "read_file"), slog.String("outcome", "ok"), slog.Int("in_bytes", 52),
		slog.Int64("out_bytes", 4096), slog.Int64("duration_us", 87), slog.Int64("calls_left", 9321),
		slog.Attr{Key: "shape", Value: slog.GroupValue(slog.String("path", "string:42"))})
	return r
}

// BenchmarkHandle: what the handler costs a call before any sink: the
// record's canonical encoding and its fields.
func BenchmarkHandle(b *testing.B) {
	h := NewHandler(discard{})
	r := callRecord()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		h.Handle(ctx, r)
	}
}
