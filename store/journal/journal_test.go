package journal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

var ctx = context.Background()

// pdir is a private (0700) temporary directory.
func pdir(t testing.TB) string {
	d := t.TempDir()
	if err := os.Chmod(d, 0o700); err != nil {
		t.Fatal(err)
	}
	return d
}

func open(t testing.TB, dir string, opts *Options) *Journal {
	t.Helper()
	j, err := Open(dir, "events", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j
}

func appendAll(t testing.TB, j *Journal, events ...string) []Record {
	t.Helper()
	var out []Record
	for _, e := range events {
		r, err := j.Append(ctx, []byte(e))
		if err != nil {
			t.Fatalf("append %s: %v", e, err)
		}
		out = append(out, r)
	}
	return out
}

func wantCode(t testing.TB, err error, code fault.Code, sentinel error) {
	t.Helper()
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("code %q, want %q (%v)", got, code, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("%v is not %v", err, sentinel)
	}
}

func TestAppendVerifyRead(t *testing.T) {
	dir := pdir(t)
	j := open(t, dir, nil)
	recs := appendAll(t, j, `{"b": 2, "a": [1, 2.50, "x"]}`, `"plain"`, `null`, `{"nested":{"z":1,"y":{}}}`)
	if string(recs[0].Event) != `{"a":[1,2.5,"x"],"b":2}` || recs[0].Prev != Genesis || recs[1].Prev != recs[0].Hash {
		t.Fatalf("records %+v", recs)
	}
	rep, err := j.Verify(ctx)
	if err != nil || rep.Records != 4 || rep.Head != recs[3].Hash || rep.Bytes != rep.Size {
		t.Fatalf("verify %+v %v", rep, err)
	}
	// A second handle continues the same chain.
	k := open(t, dir, nil)
	r5 := appendAll(t, k, `5`)[0]
	if r5.Seq != 5 || r5.Prev != recs[3].Hash {
		t.Fatalf("second handle appended %+v", r5)
	}
	// And the first notices.
	if r6 := appendAll(t, j, `6`)[0]; r6.Seq != 6 || r6.Prev != r5.Hash {
		t.Fatalf("first handle appended %+v", r6)
	}
	got, _, err := j.Read(ctx, 2, 2)
	if err != nil || len(got) != 2 || got[0].Seq != 2 || string(got[1].Event) != "null" {
		t.Fatalf("read %+v %v", got, err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	first := strings.SplitN(string(data), "\n", 2)[0]
	want := fmt.Sprintf(`{"seq":1,"prev":"%s","hash":"%s","event":{"a":[1,2.5,"x"],"b":2}}`, Genesis, recs[0].Hash)
	if first != want {
		t.Fatalf("line 1 is\n%s\nwant\n%s", first, want)
	}
	if st, _ := os.Stat(filepath.Join(dir, "events.jsonl")); st.Mode().Perm() != 0o600 {
		t.Fatalf("journal mode %v", st.Mode())
	}
}

func TestCanonicalize(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	// An event whose canonical form is exactly n bytes: "xxx...".
	sized := func(n int) string { return `"` + strings.Repeat("x", n-2) + `"` }
	cases := []struct {
		in, out string
		code    fault.Code
	}{
		{`{"b":1,"a":2}`, `{"a":2,"b":1}`, ""},
		{` [ 1 , 2 ] `, `[1,2]`, ""},
		{`1.0`, `1`, ""},
		{`1e2`, `100`, ""},
		{`0.1`, `0.1`, ""},
		{`-0`, `0`, ""},
		{`0e-999999`, `0`, ""},
		{`9007199254740993`, "", fault.InvalidInput},
		{`12345678901234567890`, "", fault.InvalidInput},
		{`9007199254740992`, `9007199254740992`, ""},
		{`1e400`, "", fault.InvalidInput},
		{`-1e400`, "", fault.InvalidInput},
		{`1e-400`, "", fault.InvalidInput},
		{`0.1000000000000000055511151231257827`, "", fault.InvalidInput},
		{`{"a":1,"a":2}`, "", fault.InvalidInput},
		{`{"a":{"b":1,"b":1}}`, "", fault.InvalidInput},
		{"\"\xff\"", "", fault.InvalidInput},
		{`"\ud800"`, "", fault.InvalidInput},
		{`"\u00e9"`, `"é"`, ""},
		{``, "", fault.InvalidInput},
		{`   `, "", fault.InvalidInput},
		{`1 2`, "", fault.InvalidInput},
		{`{"a":NaN}`, "", fault.InvalidInput},
		{`{"a":Infinity}`, "", fault.InvalidInput},
		{`{`, "", fault.InvalidInput},
		{deep(limits.JournalMaxDepth), deep(limits.JournalMaxDepth), ""},
		{deep(limits.JournalMaxDepth + 1), "", fault.InvalidInput},
		{sized(limits.JournalMaxEventBytes), sized(limits.JournalMaxEventBytes), ""},
		{sized(limits.JournalMaxEventBytes + 1), "", fault.Limit},
		{" " + sized(limits.JournalMaxInputBytes-1), "", fault.Limit},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d:%.30s", i, c.in), func(t *testing.T) {
			got, err := Canonicalize([]byte(c.in), 0)
			if code := fault.CodeOf(err); code != c.code {
				t.Fatalf("code %q, want %q (%v)", code, c.code, err)
			}
			if err == nil && string(got) != c.out {
				t.Fatalf("got %.60s, want %.60s", got, c.out)
			}
		})
	}
}

// tamper edits a three-record journal and checks Verify's first bad record.
func TestTamperDetected(t *testing.T) {
	type edit func(lines []string) []string
	cases := []struct {
		name     string
		edit     edit
		sentinel error
		seq      uint64
		line     int
		records  uint64
	}{
		{"event edited", func(l []string) []string { l[1] = strings.Replace(l[1], `"n":2`, `"n":3`, 1); return l }, ErrCorrupt, 2, 2, 1},
		{"event and hash edited", func(l []string) []string {
			r, _ := parseRecord([]byte(l[1]), limits.JournalMaxEventBytes)
			line, _ := EncodeRecord(2, r.Prev, []byte(`{"n":9}`))
			l[1] = strings.TrimSuffix(string(line), "\n")
			return l
		}, ErrCorrupt, 3, 3, 2},
		{"record deleted", func(l []string) []string { return append(l[:1], l[2:]...) }, ErrCorrupt, 2, 2, 1},
		{"records swapped", func(l []string) []string { l[0], l[1] = l[1], l[0]; return l }, ErrCorrupt, 1, 1, 0},
		{"record duplicated", func(l []string) []string { return append(l[:2], l[1:]...) }, ErrCorrupt, 3, 3, 2},
		{"whitespace added", func(l []string) []string { l[2] = strings.Replace(l[2], `,"event"`, `, "event"`, 1); return l }, ErrCorrupt, 3, 3, 2},
		{"garbage line", func(l []string) []string { return append(l, "garbage") }, ErrCorrupt, 4, 4, 3},
		{"blank line", func(l []string) []string { return append(l[:1], append([]string{""}, l[1:]...)...) }, ErrCorrupt, 2, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := pdir(t)
			j := open(t, dir, nil)
			appendAll(t, j, `{"n":1}`, `{"n":2}`, `{"n":3}`)
			p := filepath.Join(dir, "events.jsonl")
			data, _ := os.ReadFile(p)
			lines := c.edit(strings.Split(strings.TrimSuffix(string(data), "\n"), "\n"))
			os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
			rep, err := j.Verify(ctx)
			wantCode(t, err, fault.Integrity, c.sentinel)
			var re *RecordError
			if !errors.As(err, &re) || re.Seq != c.seq || re.Line != c.line || rep.Records != c.records || re.Offset != rep.Bytes {
				t.Fatalf("record error %+v, report %+v", re, rep)
			}
			lastBad := c.name == "garbage line" || c.name == "whitespace added"
			if _, err := j.Append(ctx, []byte(`{}`)); lastBad && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("append after a corrupt last record: %v", err)
			}
			if _, err := j.Repair(ctx); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("repair of a corrupt journal: %v", err)
			}
		})
	}
}

func TestIncompleteTailAndRepair(t *testing.T) {
	dir := pdir(t)
	j := open(t, dir, nil)
	recs := appendAll(t, j, `{"n":1}`, `{"n":2}`)
	p := filepath.Join(dir, "events.jsonl")
	good, _ := os.ReadFile(p)
	for _, tail := range []string{`{"seq":3,"prev":"ab`, "\x00\x00\x00\x00", "x"} {
		os.WriteFile(p, append(bytes.Clone(good), tail...), 0o600)
		rep, err := j.Verify(ctx)
		wantCode(t, err, fault.Integrity, ErrIncompleteTail)
		var re *RecordError
		if !errors.As(err, &re) || re.Seq != 3 || re.Line != 3 || re.Offset != int64(len(good)) || rep.Records != 2 {
			t.Fatalf("tail %q: %+v %+v", tail, re, rep)
		}
		// Append refuses; the tail is still there.
		_, err = j.Append(ctx, []byte(`{"n":3}`))
		wantCode(t, err, fault.Integrity, ErrIncompleteTail)
		if now, _ := os.ReadFile(p); len(now) != len(good)+len(tail) {
			t.Fatal("append changed a journal with an incomplete tail")
		}
		fixed, err := j.Repair(ctx)
		if err != nil || fixed.Removed != int64(len(tail)) || fixed.Records != 2 {
			t.Fatalf("repair %+v %v", fixed, err)
		}
		if r := appendAll(t, j, `{"n":3}`)[0]; r.Seq != 3 || r.Prev != recs[1].Hash {
			t.Fatalf("append after repair %+v", r)
		}
		os.WriteFile(p, good, 0o600)
	}
	if fixed, err := j.Repair(ctx); err != nil || fixed.Removed != 0 {
		t.Fatalf("repair of a sound journal: %+v %v", fixed, err)
	}
}

func TestJournalBoundEdge(t *testing.T) {
	dir := pdir(t)
	j := open(t, dir, nil)
	recs := appendAll(t, j, `{"n":1}`)
	line, _ := EncodeRecord(2, recs[0].Hash, []byte(`{"n":2}`))
	size := int64(len(line)) + int64(len(mustRead(t, filepath.Join(dir, "events.jsonl"))))
	j.Close()

	at := open(t, dir, &Options{MaxJournalBytes: size})
	appendAll(t, at, `{"n":2}`)
	_, err := at.Append(ctx, []byte(`{}`))
	wantCode(t, err, fault.Limit, nil)

	dir2 := pdir(t)
	j2 := open(t, dir2, nil)
	appendAll(t, j2, `{"n":1}`)
	past := open(t, dir2, &Options{MaxJournalBytes: size - 1})
	_, err = past.Append(ctx, []byte(`{"n":2}`))
	wantCode(t, err, fault.Limit, nil)
}

func mustRead(t testing.TB, p string) []byte {
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDefaultJournalBound fills a journal to exactly 32 MiB, verifies it,
// and refuses the next append.
func TestDefaultJournalBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 32 MiB")
	}
	dir := pdir(t)
	var buf bytes.Buffer
	head, seq := Genesis, uint64(0)
	pad := func(n int) []byte { return []byte(`{"p":"` + strings.Repeat("x", n) + `"}`) }
	add := func(ev []byte) {
		seq++
		var line []byte
		line, head = EncodeRecord(seq, head, ev)
		buf.Write(line)
	}
	for {
		left := limits.JournalMaxJournalBytes - buf.Len()
		empty, _ := EncodeRecord(seq+1, head, pad(0))
		if left-len(empty) <= limits.JournalMaxEventBytes-len(pad(0)) {
			add(pad(left - len(empty)))
			break
		}
		add(pad(60_000))
	}
	if buf.Len() != limits.JournalMaxJournalBytes {
		t.Fatalf("built %d bytes", buf.Len())
	}
	os.WriteFile(filepath.Join(dir, "events.jsonl"), buf.Bytes(), 0o600)
	j := open(t, dir, nil)
	rep, err := j.Verify(ctx)
	if err != nil || rep.Records != seq {
		t.Fatalf("verify %+v %v", rep, err)
	}
	_, err = j.Append(ctx, []byte(`1`))
	wantCode(t, err, fault.Limit, nil)
	os.WriteFile(filepath.Join(dir, "events.jsonl"), append(buf.Bytes(), '\n'), 0o600)
	_, err = j.Verify(ctx)
	wantCode(t, err, fault.Limit, nil)
}

func TestOpenRefusals(t *testing.T) {
	shared := pdir(t)
	os.Chmod(shared, 0o755)
	cases := []struct {
		name, dir, journal string
		opts               *Options
		code               fault.Code
	}{
		{"group-readable directory", shared, "j", nil, fault.Denied},
		{"relative directory", "rel", "j", nil, fault.InvalidInput},
		{"missing directory", filepath.Join(pdir(t), "none"), "j", nil, fault.NotFound},
		{"bad name", pdir(t), "../j", nil, fault.InvalidInput},
		{"upper-case name", pdir(t), "J", nil, fault.InvalidInput},
		{"empty name", pdir(t), "", nil, fault.InvalidInput},
		{"event bound too large", pdir(t), "j", &Options{MaxEventBytes: limits.JournalMaxEventBytes + 1}, fault.InvalidInput},
		{"journal bound too large", pdir(t), "j", &Options{MaxJournalBytes: limits.JournalMaxJournalBytes + 1}, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j, err := Open(c.dir, c.journal, c.opts)
			if err == nil {
				j.Close()
			}
			wantCode(t, err, c.code, nil)
		})
	}
	// A symlink where the journal file should be is never followed.
	dir := pdir(t)
	target := filepath.Join(pdir(t), "target")
	os.WriteFile(target, nil, 0o600)
	os.Symlink(target, filepath.Join(dir, "events.jsonl"))
	j := open(t, dir, nil)
	if _, err := j.Append(ctx, []byte(`1`)); err == nil {
		t.Fatal("appended through a symlink")
	}
	if b := mustRead(t, target); len(b) != 0 {
		t.Fatal("symlink target written")
	}
	j2 := open(t, pdir(t), nil)
	_, err := j2.Verify(ctx)
	wantCode(t, err, fault.NotFound, nil)
}

// A journal file with another hard link (to a file outside the journal's
// directory, say) is never appended to or truncated: that would change
// the other name's file too.
func TestHardLinkedJournalRefused(t *testing.T) {
	dir, elsewhere := pdir(t), pdir(t)
	seed := open(t, elsewhere, nil)
	appendAll(t, seed, `1`)
	outside := filepath.Join(elsewhere, "events.jsonl")
	if err := os.Link(outside, filepath.Join(dir, "events.jsonl")); err != nil {
		t.Fatal(err)
	}
	valid := mustRead(t, outside)
	j := open(t, dir, nil)
	_, err := j.Append(ctx, []byte(`2`))
	wantCode(t, err, fault.Denied, nil)
	if got := mustRead(t, outside); !bytes.Equal(got, valid) {
		t.Fatalf("append changed the other link's file: %q", got)
	}
	// Reading through it is reading a file in the directory: allowed.
	if _, err := j.Verify(ctx); err != nil {
		t.Fatalf("verify: %v", err)
	}
	torn := append(valid, `{"incomplete`...)
	if err := os.WriteFile(outside, torn, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = j.Repair(ctx)
	wantCode(t, err, fault.Denied, nil)
	if got := mustRead(t, outside); !bytes.Equal(got, torn) {
		t.Fatalf("repair changed the other link's file: %q", got)
	}
}

func TestEventBoundEdge(t *testing.T) {
	j := open(t, pdir(t), &Options{MaxEventBytes: 10})
	appendAll(t, j, `"12345678"`)
	_, err := j.Append(ctx, []byte(`"123456789"`))
	wantCode(t, err, fault.Limit, nil)
}

func TestConcurrentAppends(t *testing.T) {
	dir := pdir(t)
	handles := []*Journal{open(t, dir, nil), open(t, dir, nil)}
	var wg sync.WaitGroup
	for g := range 4 {
		j := handles[g%2]
		wg.Go(func() {
			for i := range 25 {
				if _, err := j.Append(ctx, []byte(fmt.Sprintf(`{"g":%d,"i":%d}`, g, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	rep, err := handles[0].Verify(ctx)
	if err != nil || rep.Records != 100 {
		t.Fatalf("verify %+v %v", rep, err)
	}
}

func TestLockWaitIsBounded(t *testing.T) {
	dir := pdir(t)
	j := open(t, dir, &Options{LockWait: 30 * time.Millisecond})
	f, err := os.OpenFile(filepath.Join(dir, "events.lock"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	_, err = j.Append(ctx, []byte(`1`))
	wantCode(t, err, fault.Unavailable, nil)
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	appendAll(t, j, `1`)
}

// BenchmarkAppend measures durable appends (one fdatasync each) of a small
// event; appends/s is 1e9 / ns/op.
func BenchmarkAppend(b *testing.B) {
	j := open(b, pdir(b), nil)
	ev := []byte(`{"service":"api","version":"1.4.2","ok":true,"n":12345}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Append(ctx, ev); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
}

// BenchmarkVerify measures verification of a 1,000-record journal.
func BenchmarkVerify(b *testing.B) {
	j := open(b, pdir(b), nil)
	for i := range 1000 {
		if _, err := j.Append(ctx, []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("x", 200)))); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := j.Verify(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
