package feed

import (
	"testing"
	"time"
)

func TestParseDate(t *testing.T) {
	cases := []struct {
		in      string
		local   string // Time in its own offset, RFC 3339; "" when no instant
		utc     string
		problem string
		weekday bool
	}{
		{in: "Mon, 02 Jan 2006 15:04:05 -0700", local: "2006-01-02T15:04:05-07:00", utc: "2006-01-02T22:04:05Z"},
		{in: "Mon, 2 Jan 2006 15:04:05 GMT", local: "2006-01-02T15:04:05Z", utc: "2006-01-02T15:04:05Z"},
		{in: "2 Jan 2006 15:04 +0100", local: "2006-01-02T15:04:00+01:00", utc: "2006-01-02T14:04:00Z"},
		{in: "Mon, 02 Jan 06 15:04:05 EST", local: "2006-01-02T15:04:05-05:00", utc: "2006-01-02T20:04:05Z"},
		{in: "Thu, 01 Jan 70 00:00:00 PDT", local: "1970-01-01T00:00:00-07:00", utc: "1970-01-01T07:00:00Z"},
		{in: "Monday, 02 January 2006 15:04:05 +05:30", local: "2006-01-02T15:04:05+05:30", utc: "2006-01-02T09:34:05Z"},
		{in: "Mon, 02 Jan 2006 15:04:05 +0000 (UTC)", local: "2006-01-02T15:04:05Z", utc: "2006-01-02T15:04:05Z"},
		{in: "Tue, 02 Jan 2006 15:04:05 GMT", local: "2006-01-02T15:04:05Z", utc: "2006-01-02T15:04:05Z", weekday: true},
		{in: "2006-01-02T15:04:05Z", local: "2006-01-02T15:04:05Z", utc: "2006-01-02T15:04:05Z"},
		{in: "2006-01-02T15:04:05.123+09:00", local: "2006-01-02T15:04:05.123+09:00", utc: "2006-01-02T06:04:05.123Z"},
		{in: "2006-01-02T15:04-03:30", local: "2006-01-02T15:04:00-03:30", utc: "2006-01-02T18:34:00Z"},
		{in: "2006-01-02 15:04:05+0000", local: "2006-01-02T15:04:05Z", utc: "2006-01-02T15:04:05Z"},
		{in: "2006-01-02t15:04:05z", local: "2006-01-02T15:04:05Z", utc: "2006-01-02T15:04:05Z"},
		{in: "Mon, 02 Jan 2006 15:04:05 CET", problem: "ambiguous time zone abbreviation"},
		{in: "Mon, 02 Jan 2006 15:04:05", problem: "no time zone"},
		{in: "Mon, 02 Jan 2006 15:04:05 A", problem: "ambiguous time zone abbreviation"},
		{in: "Mon, 30 Feb 2006 15:04:05 GMT", problem: "a field is out of range"},
		{in: "Mon, 02 Jan 2006 25:04:05 GMT", problem: "a field is out of range"},
		{in: "2006-02-30T10:00:00Z", problem: "a field is out of range"},
		{in: "2006-01-02T15:04:05", problem: "no time zone"},
		{in: "2006-01-02", problem: "a date without a time of day or time zone"},
		{in: "2006", problem: "a date without a time of day or time zone"},
		{in: "", problem: "empty"},
		{in: "yesterday", problem: "not an RFC 822 date"},
		{in: "11/03/2024 9am", problem: "not an RFC 822 date"},
		{in: "Foo, 02 Jan 2006 15:04:05 GMT", problem: "not an RFC 822 date"},
		{in: "2006-13-01T00:00:00Z", problem: "a field is out of range"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			d, weekday := parseDate(c.in)
			if d.Original != c.in || d.Problem != c.problem || (weekday != "") != c.weekday {
				t.Fatalf("%+v weekday %q", d, weekday)
			}
			if c.problem != "" {
				if d.Time != nil || d.UTC != nil {
					t.Fatal("a date with a problem has no instant")
				}
				return
			}
			if got := d.Time.Format(time.RFC3339Nano); got != c.local {
				t.Errorf("time %s", got)
			}
			if got := d.UTC.Format(time.RFC3339Nano); got != c.utc || d.UTC.Location() != time.UTC {
				t.Errorf("utc %s", got)
			}
			if !d.Time.Equal(*d.UTC) {
				t.Error("time and utc are different instants")
			}
		})
	}
}

// FuzzParseDate: any text gives either an instant whose two forms agree,
// or a problem and no instant; never a panic.
func FuzzParseDate(f *testing.F) {
	for _, s := range []string{"Mon, 02 Jan 2006 15:04:05 -0700", "2006-01-02T15:04:05.999Z", "2006-01-02", "Tue, 30 Feb 99 24:00 EST", "2006-01-02 15:04:05+0000", "(x)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, _ := parseDate(s)
		if d.Original != s {
			t.Fatal("original changed")
		}
		if (d.Problem == "") != (d.Time != nil && d.UTC != nil) {
			t.Fatalf("%+v", d)
		}
		if d.Time != nil && !d.Time.Equal(*d.UTC) {
			t.Fatal("two instants")
		}
	})
}
