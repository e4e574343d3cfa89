package trail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

func event(i int) *audit.Event {
	r := slog.NewRecord(time.Date(2026, 12, 2, 0, 0, 0, i, time.UTC), slog.LevelInfo, audit.MsgCall, 0)
	r.AddAttrs(slog.String("actor", "alice"), slog.String("tool", "read_file"), slog.String("outcome", "ok"), slog.Int("n", i))
	return audit.Encode(r)
}

func writeTrail(t *testing.T, path string, n int, opts *Options) {
	t.Helper()
	w, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close(context.Background())
	for i := range n {
		if err := w.Append(event(i).JSON); err != nil {
			t.Fatal(err)
		}
	}
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
}

func writeLines(t *testing.T, path string, ls []string) {
	t.Helper()
	s := strings.Join(ls, "")
	if !strings.HasSuffix(s, "\n") && s != "" {
		s += "\n"
	}
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

func verify(t *testing.T, paths ...string) (*Report, *Break) {
	t.Helper()
	rep, err := Verify(context.Background(), paths, 0, "")
	if err == nil {
		return rep, nil
	}
	var b *Break
	if !errors.As(err, &b) || !errors.Is(err, ErrBroken) || fault.As(err).Code != fault.Integrity {
		t.Fatalf("Verify: %v", err)
	}
	return rep, b
}

// TestVerifyNamesTheFirstBadLine: a trail as written verifies; each way
// of tampering with it is named at the first line it touches, with its
// kind.
func TestVerifyNamesTheFirstBadLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeTrail(t, path, 6, nil)
	rep, b := verify(t, path)
	if b != nil || rep.Records != 6 || rep.Seq != 6 || rep.Head == journal.Genesis {
		t.Fatalf("sound trail: %+v %v", rep, b)
	}
	orig := lines(t, path)
	rechained := func(ls []string, i int, edit func(string) string) []string {
		// An edit whose hash is made again, as a forger would.
		rec, err := journal.DecodeRecord([]byte(strings.TrimSuffix(ls[i], "\n")), 0)
		if err != nil {
			t.Fatal(err)
		}
		ev := []byte(edit(string(rec.Event)))
		line, _ := journal.EncodeRecord(rec.Seq, rec.Prev, ev)
		out := append([]string(nil), ls...)
		out[i] = string(line)
		return out
	}
	cases := []struct {
		name   string
		tamper func([]string) []string
		line   int
		kind   string
	}{
		{"value edited", func(ls []string) []string {
			ls[2] = strings.Replace(ls[2], `"alice"`, `"mallory"`, 1)
			return ls
		}, 3, Changed},
		{"edited and its hash made again", func(ls []string) []string {
			return rechained(ls, 3, func(ev string) string { return strings.Replace(ev, `"alice"`, `"mallory"`, 1) })
		}, 4, Changed},
		{"line removed", func(ls []string) []string { return append(ls[:2:2], ls[3:]...) }, 3, Removed},
		{"first line removed", func(ls []string) []string { return ls[1:] }, 1, Removed},
		{"two lines swapped", func(ls []string) []string {
			ls[1], ls[2] = ls[2], ls[1]
			return ls
		}, 2, Reordered},
		{"line moved later", func(ls []string) []string {
			return []string{ls[0], ls[2], ls[3], ls[4], ls[1], ls[5]}
		}, 2, Reordered},
		{"line copied", func(ls []string) []string { return append(ls[:3:3], append([]string{ls[1]}, ls[3:]...)...) }, 4, Reordered},
		{"line cut mid-way", func(ls []string) []string {
			ls[5] = ls[5][:40]
			return ls
		}, 6, Incomplete},
		{"not a record", func(ls []string) []string {
			ls[0] = `{"time":"2026","msg":"call"}` + "\n"
			return ls
		}, 1, Changed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "audit.jsonl")
			ls := c.tamper(append([]string(nil), orig...))
			s := strings.Join(ls, "")
			if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
				t.Fatal(err)
			}
			_, b := verify(t, p)
			if b == nil || b.Line != c.line || b.Kind != c.kind || b.Path != p {
				t.Fatalf("break %+v, want line %d %s", b, c.line, c.kind)
			}
			t.Logf("%v", b)
		})
	}
}

// TestRotation: past its size the trail is renamed aside and the new
// file's first record continues the numbering and chains to the last of
// the one before; the files verify in order as one chain, and the new
// file alone verifies after the old one's head but not from the start.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	pad := strings.Repeat("x", 30*limits.KiB)
	w, err := Open(path, &Options{MaxBytes: limits.AuditMinFileBytes})
	if err != nil {
		t.Fatal(err)
	}
	const n = 80 // about 2.4 MiB: two rotations
	for i := range n {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "big", 0)
		r.AddAttrs(slog.Int("i", i), slog.String("pad", pad))
		w.Write(audit.Encode(r))
	}
	w.Close(context.Background())
	if w.Stats().Failed != 0 {
		t.Fatalf("%d appends failed", w.Stats().Failed)
	}
	rotated, _ := filepath.Glob(path + ".2*")
	sort.Strings(rotated)
	if len(rotated) != 2 {
		t.Fatalf("rotated files: %v", rotated)
	}
	for _, p := range append(rotated, path) {
		st, _ := os.Stat(p)
		if st.Size() > limits.AuditMinFileBytes {
			t.Errorf("%s has %d bytes, past the bound", p, st.Size())
		}
	}
	rep, b := verify(t, append(rotated, path)...)
	if b != nil || rep.Records != n || len(rep.Files) != 3 || rep.Files[1].First != rep.Files[0].Last+1 {
		t.Fatalf("rotated trail: %+v %v", rep, b)
	}
	if _, b := verify(t, path); b == nil || b.Kind != Removed || b.Line != 1 {
		t.Errorf("the last file alone verified from the start: %+v", b)
	}
	if _, err := Verify(context.Background(), []string{path}, rep.Files[1].Last, rep.Files[1].Head); err != nil {
		t.Errorf("the last file after the one before's head: %v", err)
	}
	if _, b := verify(t, rotated[1], rotated[0], path); b == nil {
		t.Error("files out of order verified")
	}
}

// TestWritersShareATrail: writers with their own files and locks (as
// processes have) appending at once make one chain with every event once,
// through rotations.
func TestWritersShareATrail(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	const writers, each = 4, 300
	pad := strings.Repeat("y", 4*limits.KiB) // about 5 MiB in all: rotations meet concurrent appends
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tw, err := Open(path, &Options{MaxBytes: limits.AuditMinFileBytes})
			if err != nil {
				t.Error(err)
				return
			}
			defer tw.Close(context.Background())
			for i := range each {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "e", 0)
				r.AddAttrs(slog.String("id", fmt.Sprintf("%d-%d", w, i)), slog.String("pad", pad))
				if err := tw.Append(audit.Encode(r).JSON); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	files, _ := filepath.Glob(path + ".2*")
	sort.Strings(files)
	files = append(files, path)
	rep, b := verify(t, files...)
	if b != nil || rep.Records != writers*each {
		t.Fatalf("%d records, break %v", rep.Records, b)
	}
	seen := map[string]bool{}
	for _, f := range files {
		for _, l := range lines(t, f) {
			i := strings.Index(l, `"id":"`)
			id := l[i+6 : i+6+strings.IndexByte(l[i+6:], '"')]
			if seen[id] {
				t.Fatalf("event %s twice", id)
			}
			seen[id] = true
		}
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct events", len(seen))
	}
}

// TestWriterContinuesOrSetsAside: a new writer continues an existing
// trail's chain; a trail that does not end in a record (ending mid-line,
// or a plain JSON line of an older capkit) is moved aside untouched and a
// new chain starts with a record that names it.
func TestWriterContinuesOrSetsAside(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	writeTrail(t, path, 3, nil)
	writeTrail(t, path, 2, nil)
	if rep, b := verify(t, path); b != nil || rep.Records != 5 {
		t.Fatalf("%+v %v", rep, b)
	}
	for _, tail := range []string{`{"seq":9,"prev":"`, `{"seq":6,"prev":"x`, "{\"msg\":\"call\"}\n", "{\"msg\""} {
		before, _ := os.ReadFile(path)
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString(tail)
		f.Close()
		writeTrail(t, path, 1, nil)
		if rep, b := verify(t, path); b != nil || rep.Records != 2 {
			t.Fatalf("after %q: %+v %v", tail, rep, b)
		}
		if ls := lines(t, path); !strings.Contains(ls[0], `"msg":"audit trail set aside"`) || !strings.Contains(ls[0], ".unchained") {
			t.Errorf("first record of the new chain: %s", ls[0])
		}
		aside, _ := filepath.Glob(path + ".*.unchained")
		sort.Strings(aside)
		kept, _ := os.ReadFile(aside[len(aside)-1])
		if string(kept) != string(before)+tail {
			t.Errorf("the file set aside was changed:\n%q\nwant\n%q", kept, string(before)+tail)
		}
		os.Remove(aside[len(aside)-1])
	}
}
