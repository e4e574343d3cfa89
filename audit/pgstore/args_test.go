package pgstore

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/internal/testkit/pgtest"
	"github.com/capkit/capkit/store/journal"
)

// TestInsertedColumns: the columns the store fills from the insert's
// binary parameters hold each event's members as they are: text past
// ASCII, the largest integers an event holds, a time before 2000 (where
// PostgreSQL counts from) cut to the microsecond, calls_left absent (-1);
// and the chain's fields.
func TestInsertedColumns(t *testing.T) {
	url := pgtest.URL(t)
	s := open(t, url, t.TempDir(), nil)
	defer s.Close(context.Background())
	denied := slog.NewRecord(time.Date(2026, 12, 2, 18, 0, 0, 123456789, time.UTC), slog.LevelInfo, audit.MsgCall, 0)
	denied.AddAttrs(slog.String("actor", "é\"x\u2028"), slog.String("tool", "read_file"), slog.String("outcome", "denied"),
		slog.String("policy", "tool.read_file.max_calls"), slog.Int64("in_bytes", 1<<53-1), slog.Int64("out_bytes", 0),
		slog.Int64("duration_us", -(1<<53-1)), slog.Int64("calls_left", 0))
	old := slog.NewRecord(time.Date(1999, 12, 31, 23, 59, 59, 999999999, time.UTC), slog.LevelInfo, "note", 0)
	events := []*audit.Event{audit.Encode(denied), audit.Encode(old)}
	for _, e := range events {
		s.Write(e)
	}
	flush(t, s)

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT stream, host, seq, prev, hash, at, msg, actor, tool, outcome, policy,
		duration_us, in_bytes, out_bytes, calls_left, event FROM capkit_audit ORDER BY seq`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[storedRow])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(events) {
		t.Fatalf("%d rows, want %d", len(got), len(events))
	}
	host, _ := os.Hostname()
	prev := journal.Genesis
	for i, e := range events {
		_, hash := journal.EncodeRecord(uint64(i+1), prev, e.JSON)
		want := storedRow{s.Stream(), host, int64(i + 1), prev, hash, e.Time.Truncate(time.Microsecond), e.Msg, e.Actor, e.Tool,
			e.Outcome, e.Policy, e.DurationUS, e.InBytes, e.OutBytes, e.CallsLeft, string(e.JSON)}
		g := got[i]
		if !g.At.Equal(want.At) {
			t.Errorf("row %d: at %v, want %v", i, g.At, want.At)
		}
		g.At = want.At
		if g != want {
			t.Errorf("row %d:\n got %+v\nwant %+v", i, g, want)
		}
		prev = hash
	}
}

type storedRow struct {
	Stream, Host                        string
	Seq                                 int64
	Prev, Hash                          string
	At                                  time.Time
	Msg, Actor, Tool, Outcome, Policy   string
	DurationUS, InBytes, OutBytes, Left int64
	Event                               string
}
