package feed

import (
	"strconv"
	"strings"
	"time"
)

// Dates.
//
// RSS writes RFC 822 dates ("Mon, 02 Jan 2006 15:04:05 GMT"); Atom and
// Dublin Core write RFC 3339 / W3C-DTF ("2006-01-02T15:04:05Z"). ISO dates
// go through time.Parse. RFC 822 dates are read here rather than by
// net/mail.ParseDate, because that (through time.Parse) gives a zone
// abbreviation such as EST a zero offset unless it happens to be the
// host's local zone, silently moving the instant by hours; this reader
// maps the RFC 822 zone names to their fixed offsets and reports other
// abbreviations (CET, IST, BST...) as ambiguous. Both paths keep the
// written offset in Time.

// rfc822Zones are the zone names RFC 822 defines (military single letters
// other than Z are left out: RFC 2822 notes their signs were specified
// backwards and says to treat them as unknown).
var rfc822Zones = [...]named[int]{
	{"UT", 0}, {"UTC", 0}, {"GMT", 0}, {"Z", 0},
	{"EST", -5 * 3600}, {"EDT", -4 * 3600}, {"CST", -6 * 3600}, {"CDT", -5 * 3600},
	{"MST", -7 * 3600}, {"MDT", -6 * 3600}, {"PST", -8 * 3600}, {"PDT", -7 * 3600},
}

var months = [...]named[time.Month]{
	{"jan", time.January}, {"feb", time.February}, {"mar", time.March}, {"apr", time.April},
	{"may", time.May}, {"jun", time.June}, {"jul", time.July}, {"aug", time.August},
	{"sep", time.September}, {"oct", time.October}, {"nov", time.November}, {"dec", time.December},
	{"january", time.January}, {"february", time.February}, {"march", time.March}, {"april", time.April},
	{"june", time.June}, {"july", time.July}, {"august", time.August}, {"sept", time.September},
	{"september", time.September}, {"october", time.October}, {"november", time.November}, {"december", time.December},
}

var weekdays = [...]named[time.Weekday]{
	{"sun", time.Sunday}, {"mon", time.Monday}, {"tue", time.Tuesday}, {"wed", time.Wednesday},
	{"thu", time.Thursday}, {"fri", time.Friday}, {"sat", time.Saturday},
	{"sunday", time.Sunday}, {"monday", time.Monday}, {"tuesday", time.Tuesday}, {"wednesday", time.Wednesday},
	{"thursday", time.Thursday}, {"friday", time.Friday}, {"saturday", time.Saturday},
}

// named is a name and its value in a table. The tables are arrays, laid
// out by the linker, not maps, which would be built at every process start.
type named[V any] struct {
	name  string
	value V
}

// lookup is the value named name in table.
func lookup[V any](table []named[V], name string) (V, bool) {
	for _, n := range table {
		if n.name == name {
			return n.value, true
		}
	}
	var zero V
	return zero, false
}

// isoLayouts are tried in order on dates that start like an ISO date.
var isoLayouts = []string{
	"2006-01-02T15:04:05.999999999Z07:00",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05.999999999Z0700",
	"2006-01-02T15:04Z0700",
}

// isoZoneless are ISO forms without a zone: parseable, but not instants.
var isoZoneless = []string{"2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02", "2006-01", "2006"}

// parseDate reads s into a Date. A date that names no instant gets a
// Problem instead of Time and UTC. weekday is set (to a message) when an
// RFC 822 date names the wrong day of the week.
func parseDate(s string) (d *Date, weekday string) {
	d = &Date{Original: s}
	var t time.Time
	var problem string
	switch {
	case s == "":
		problem = "empty"
	case len(s) >= 4 && isDigits(s[:4]) && (len(s) == 4 || s[4] == '-'):
		t, problem = parseISO(s)
	default:
		t, problem, weekday = parseRFC822(s)
	}
	if problem != "" {
		d.Problem = problem
		return d, ""
	}
	_, off := t.Zone()
	local := t.In(time.FixedZone("", off))
	utc := t.UTC()
	d.Time, d.UTC = &local, &utc
	return d, weekday
}

func parseISO(s string) (time.Time, string) {
	// Common variations: a space for the T, lower-case t and z.
	if len(s) > 10 && (s[10] == ' ' || s[10] == 't') {
		s = s[:10] + "T" + s[11:]
	}
	if strings.HasSuffix(s, "z") {
		s = s[:len(s)-1] + "Z"
	}
	var firstErr error
	for _, l := range isoLayouts {
		t, err := time.Parse(l, s)
		if err == nil {
			return t, ""
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	for _, l := range isoZoneless {
		if _, err := time.Parse(l, s); err == nil {
			if len(l) <= len("2006-01-02") {
				return time.Time{}, "a date without a time of day or time zone"
			}
			return time.Time{}, "no time zone"
		}
	}
	if firstErr != nil && strings.Contains(firstErr.Error(), "out of range") {
		return time.Time{}, "a field is out of range"
	}
	return time.Time{}, "not an RFC 3339 date"
}

// parseRFC822 reads "[Day,] DD Mon YYYY HH:MM[:SS] zone" (RFC 822 with
// the RFC 2822/1123 four-digit year, two-digit years as RFC 2822 §4.3
// maps them, full month and day names tolerated, a trailing comment
// ignored).
func parseRFC822(s string) (t time.Time, problem, weekday string) {
	if i := strings.IndexByte(s, '('); i > 0 && strings.HasSuffix(s, ")") {
		s = strings.TrimSpace(s[:i])
	}
	dow := time.Weekday(-1)
	if i := strings.IndexByte(s, ','); i >= 0 {
		w, ok := lookup(weekdays[:], strings.ToLower(strings.TrimSpace(s[:i])))
		if !ok {
			return t, "not an RFC 822 date", ""
		}
		dow, s = w, s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) > 0 && dow < 0 {
		if w, ok := lookup(weekdays[:], strings.ToLower(f[0])); ok {
			dow, f = w, f[1:]
		}
	}
	if len(f) != 4 && len(f) != 5 {
		return t, "not an RFC 822 date", ""
	}
	day, err := strconv.Atoi(f[0])
	if err != nil || len(f[0]) > 2 {
		return t, "not an RFC 822 date", ""
	}
	month, ok := lookup(months[:], strings.ToLower(strings.TrimSuffix(f[1], ".")))
	if !ok {
		return t, "not an RFC 822 date", ""
	}
	year, err := strconv.Atoi(f[2])
	switch {
	case err != nil || !isDigits(f[2]):
		return t, "not an RFC 822 date", ""
	case len(f[2]) == 2 && year < 50:
		year += 2000
	case len(f[2]) == 2:
		year += 1900
	case len(f[2]) != 4:
		return t, "not an RFC 822 date", ""
	}
	hms := strings.Split(f[3], ":")
	if len(hms) != 2 && len(hms) != 3 {
		return t, "not an RFC 822 date", ""
	}
	var clock [3]int
	for i, p := range hms {
		if len(p) != 2 || !isDigits(p) {
			return t, "not an RFC 822 date", ""
		}
		clock[i], _ = strconv.Atoi(p)
	}
	if clock[0] > 23 || clock[1] > 59 || clock[2] > 59 {
		return t, "a field is out of range", ""
	}
	if len(f) == 4 {
		return t, "no time zone", ""
	}
	off, problem := zoneOffset(f[4])
	if problem != "" {
		return t, problem, ""
	}
	t = time.Date(year, month, day, clock[0], clock[1], clock[2], 0, time.FixedZone("", off))
	if t.Day() != day || t.Month() != month {
		return time.Time{}, "a field is out of range", ""
	}
	if dow >= 0 && t.Weekday() != dow {
		weekday = "it says " + dow.String() + ", the date is a " + t.Weekday().String()
	}
	return t, "", weekday
}

func zoneOffset(z string) (int, string) {
	if off, ok := lookup(rfc822Zones[:], strings.ToUpper(z)); ok {
		return off, ""
	}
	if len(z) > 0 && (z[0] == '+' || z[0] == '-') {
		digits := strings.Replace(z[1:], ":", "", 1)
		if len(digits) == 4 && isDigits(digits) {
			h, _ := strconv.Atoi(digits[:2])
			m, _ := strconv.Atoi(digits[2:])
			if h > 23 || m > 59 {
				return 0, "a field is out of range"
			}
			off := h*3600 + m*60
			if z[0] == '-' {
				off = -off
			}
			return off, ""
		}
	}
	if len(z) <= 5 && isLetters(z) {
		return 0, "ambiguous time zone abbreviation"
	}
	return 0, "not an RFC 822 date"
}

func isDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isLetters(s string) bool {
	for i := range len(s) {
		if c := s[i] | 0x20; c < 'a' || c > 'z' {
			return false
		}
	}
	return s != ""
}
