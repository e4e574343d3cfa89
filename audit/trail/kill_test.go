package trail

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// childEnv names the trail a re-executed test binary appends to until it
// is killed (TestKilledWriters).
const childEnv = "CAPKIT_TRAIL_TEST_CHILD"

func init() {
	path := os.Getenv(childEnv)
	if path == "" {
		return
	}
	w, err := Open(path, &Options{MaxBytes: limits.AuditMinFileBytes})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pad := strings.Repeat("z", 2*limits.KiB) // rotations meet the kills
	for i := 0; ; i++ {
		r := slog.NewRecord(time.Now(), slog.LevelInfo, "e", 0)
		r.AddAttrs(slog.String("id", fmt.Sprintf("%d-%d", os.Getpid(), i)), slog.String("pad", pad))
		if err := w.Append(audit.Encode(r).JSON); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

// trailBytes is the size of a trail and of the files rotated from it.
func trailBytes(path string) int64 {
	files, _ := filepath.Glob(path + ".2*")
	var n int64
	for _, f := range append(files, path) {
		if st, err := os.Stat(f); err == nil {
			n += st.Size()
		}
	}
	return n
}

// TestKilledWriters: processes appending to one trail at once, killed
// outright (SIGKILL) mid-run, leave a chain that verifies, through its
// rotations, with every event once; a writer after them continues it.
func TestKilledWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	for round := range 3 {
		var kids []*exec.Cmd
		for range 3 {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+path)
			cmd.Stderr = os.Stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			kids = append(kids, cmd)
		}
		// Until the trail has grown, so that the kills land mid-run.
		for start := time.Now(); trailBytes(path) < int64(round+1)*limits.AuditMinFileBytes/2; time.Sleep(time.Millisecond) {
			if time.Since(start) > time.Minute {
				t.Fatal("the writers appended nothing")
			}
		}
		for _, k := range kids {
			k.Process.Signal(syscall.SIGKILL)
		}
		for _, k := range kids {
			if err := k.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
				t.Fatalf("a writer ended before it was killed: %v", err)
			}
		}
	}
	writeTrail(t, path, 1, &Options{MaxBytes: limits.AuditMinFileBytes})
	if aside, _ := filepath.Glob(path + ".*.unchained"); len(aside) > 0 {
		t.Fatalf("a killed writer left the trail mid-line (set aside as %v)", aside)
	}
	files, _ := filepath.Glob(path + ".2*")
	sort.Strings(files)
	files = append(files, path)
	rep, b := verify(t, files...)
	if b != nil {
		t.Fatalf("the chain breaks after the kills: %v", b)
	}
	seen := map[string]bool{}
	for _, f := range files {
		for _, l := range lines(t, f) {
			i := strings.Index(l, `"id":"`)
			if i < 0 {
				continue // the last writer's event
			}
			id := l[i+6 : i+6+strings.IndexByte(l[i+6:], '"')]
			if seen[id] {
				t.Fatalf("event %s twice", id)
			}
			seen[id] = true
		}
	}
	if uint64(len(seen))+1 != rep.Records || len(files) < 2 {
		t.Fatalf("%d events in %d records over %d files", len(seen), rep.Records, len(files))
	}
}

// TestWriterCutsATornAppend: the part of a record a writer killed
// mid-write left at the end (the next number, chained to the last
// record), cut anywhere, is removed by the next writer, which continues
// the chain in the same file; the trail verifies.
func TestWriterCutsATornAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	writeTrail(t, path, 3, nil)
	rep, _ := verify(t, path)
	line, _ := journal.EncodeRecord(rep.Seq+1, rep.Head, event(0).JSON)
	for _, cut := range []int{1, 7, 20, len(line) / 2, len(line) - 1} {
		before, _ := os.ReadFile(path)
		f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
		f.Write(line[:cut])
		f.Close()
		writeTrail(t, path, 1, nil)
		if aside, _ := filepath.Glob(path + ".*.unchained"); len(aside) > 0 {
			t.Fatalf("cut at %d: set aside", cut)
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, append(before, line...)) {
			t.Fatalf("cut at %d: the trail is not the records before and the next one", cut)
		}
		rep, b := verify(t, path)
		if b != nil {
			t.Fatalf("cut at %d: %v", cut, b)
		}
		line, _ = journal.EncodeRecord(rep.Seq+1, rep.Head, event(0).JSON)
	}
}
