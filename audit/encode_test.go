package audit

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// collect is a sink keeping what it is given.
type collect struct{ events []*Event }

func (c *collect) Write(e *Event) {
	cp := *e
	cp.JSON = bytes.Clone(e.JSON)
	c.events = append(c.events, &cp)
}
func (c *collect) Close(context.Context) error { return nil }

var when = time.Date(2026, 12, 2, 1, 2, 3, 456789000, time.UTC)

func record(msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(when, slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// asJSONHandler is what slog's own JSON handler makes of r, decoded.
func asJSONHandler(t *testing.T, r slog.Record, with func(slog.Handler) slog.Handler) map[string]any {
	t.Helper()
	var buf bytes.Buffer
	h := slog.Handler(slog.NewJSONHandler(&buf, nil))
	if with != nil {
		h = with(h)
	}
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := jsonv2.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func canonical(t *testing.T, b []byte) {
	t.Helper()
	c, err := journal.Canonicalize(b, 0)
	if err != nil {
		t.Fatalf("not a journal event: %v: %s", err, b)
	}
	if !bytes.Equal(c, b) {
		t.Fatalf("not canonical:\n%s\n%s", b, c)
	}
}

// TestEncodeIsCanonical: the handler's JSON is canonical (the journal's
// own canonicalization leaves it as it is) and means what slog's JSON
// handler writes for the same record, groups and handler attributes
// included.
func TestEncodeIsCanonical(t *testing.T) {
	type point struct {
		Z int    `json:"z"`
		A string `json:"a"`
	}
	cases := []struct {
		name string
		r    slog.Record
		with func(slog.Handler) slog.Handler
	}{
		{"call", record("call", slog.String("actor", "alice"), slog.String("tool", "read_file"), slog.String("outcome", "ok"),
			slog.Int("in_bytes", 12), slog.Int64("out_bytes", 3400), slog.Int64("duration_us", 87),
			slog.Group("shape", slog.String("path", "string:9"), slog.String("limit", "number"))), nil},
		{"escapes and order", record("m\u2028\"\\\t", slog.String("é", "\x01<>&\u00e9"), slog.String("Z", "z"), slog.String("a", ""),
			slog.String("\U0001F600", "emoji key"), slog.String("\uff61", "halfwidth key")), nil},
		{"numbers", record("n", slog.Float64("f", 1e21), slog.Float64("g", 0.1), slog.Float64("h", -0.0), slog.Uint64("u", 7),
			slog.Bool("b", true), slog.Duration("d", 1500*time.Millisecond), slog.Time("t", when)), nil},
		{"any", record("any", slog.Any("err", errors.New("boom")), slog.Any("p", point{Z: 1, A: "x"}), slog.Any("list", []int{3, 1})), nil},
		{"groups", record("g", slog.Group("outer", slog.Int("x", 1), slog.Group("", slog.Int("inline", 2)), slog.Group("empty")), slog.String("", "kept"), slog.Attr{}), nil},
		{"handler attrs", record("h", slog.Int("own", 1)), func(h slog.Handler) slog.Handler {
			return h.WithAttrs([]slog.Attr{slog.String("pre", "p")}).WithGroup("grp").WithAttrs([]slog.Attr{slog.Int("in", 2)})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sink := &collect{}
			h := slog.Handler(NewHandler(sink))
			if c.with != nil {
				h = c.with(h)
			}
			if err := h.Handle(context.Background(), c.r); err != nil {
				t.Fatal(err)
			}
			got := sink.events[0].JSON
			canonical(t, got)
			var m map[string]any
			if err := jsonv2.Unmarshal(got, &m); err != nil {
				t.Fatal(err)
			}
			if want := asJSONHandler(t, c.r, c.with); !reflect.DeepEqual(m, want) {
				t.Errorf("\ngot  %v\nwant %v", m, want)
			}
		})
	}
}

// TestEncodeDiffersWhereJSONCannot: where slog's JSON handler writes what
// canonical JSON cannot hold, the trail keeps the meaning: a second
// member of one name is left out (the first stays), an integer past 2^53
// and a non-finite float are strings.
func TestEncodeDiffersWhereJSONCannot(t *testing.T) {
	e := Encode(record("dup", slog.String("msg", "shadow"), slog.String("a", "1"), slog.String("a", "2"),
		slog.Int64("big", math.MaxInt64), slog.Float64("inf", math.Inf(1))))
	canonical(t, e.JSON)
	want := `{"a":"1","big":"9223372036854775807","inf":"+Inf","level":"INFO","msg":"dup","time":"2026-12-02T01:02:03.456789Z"}`
	if string(e.JSON) != want {
		t.Errorf("\ngot  %s\nwant %s", e.JSON, want)
	}
}

// TestEncodeFields: the fields Event names are read from the top-level
// members, and Decode reads the same back.
func TestEncodeFields(t *testing.T) {
	e := Encode(record(MsgCall, slog.String("actor", "alice"), slog.String("session", "s1"), slog.String("request", "7"),
		slog.String("tool", "grep"), slog.String("outcome", "limit"), slog.String("policy", "max_calls=2"),
		slog.Int("in_bytes", 10), slog.Int64("out_bytes", 0), slog.Int64("duration_us", 55), slog.Int64("calls_left", 0)))
	want := Event{Time: when, Msg: MsgCall, Actor: "alice", Session: "s1", Request: "7", Tool: "grep", Outcome: "limit",
		Policy: "max_calls=2", InBytes: 10, DurationUS: 55, CallsLeft: 0}
	got := *e
	got.JSON = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("encoded %+v\nwant    %+v", got, want)
	}
	d, err := Decode(e.JSON)
	if err != nil {
		t.Fatal(err)
	}
	d.JSON = nil
	if !reflect.DeepEqual(*d, want) {
		t.Errorf("decoded %+v\nwant    %+v", *d, want)
	}
	if !e.Failed() {
		t.Error("a limit is not counted as failed")
	}
	if n := Encode(record("other")); n.CallsLeft != -1 {
		t.Errorf("an event without calls_left says %d", n.CallsLeft)
	}
}

// TestEncodeTooLarge: an event past the bound is replaced by one that
// names it, its size and its call, never dropped and never cut.
func TestEncodeTooLarge(t *testing.T) {
	e := Encode(record(MsgCall, slog.String("tool", "grep"), slog.String("notes", strings.Repeat("x", limits.AuditMaxEventBytes))))
	canonical(t, e.JSON)
	d, err := Decode(e.JSON)
	if err != nil {
		t.Fatal(err)
	}
	if d.Msg != "audit event too large" || d.Tool != "grep" || !strings.Contains(string(e.JSON), `"event_msg":"call"`) {
		t.Errorf("replacement: %s", e.JSON)
	}
}

// FuzzEncode: any string as a key or a value gives a canonical event.
func FuzzEncode(f *testing.F) {
	f.Add("k", "v", "msg")
	f.Add("\u2028", "\xff\xfe", "\x00")
	f.Add("é", "\U0001F600", "")
	f.Fuzz(func(t *testing.T, key, val, msg string) {
		e := Encode(record(msg, slog.String(key, val), slog.Group(val, slog.String(key, msg)), slog.Int(msg, 3)))
		canonical(t, e.JSON)
	})
}
