package journal

import (
	"bufio"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit"
)

// TestCrashChild appends to the journal its environment names until killed,
// printing "SEQ HASH" on stdout after each Append returns.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv("JOURNAL_CRASH_DIR")
	if dir == "" {
		t.Skip("child of TestCrashAppend")
	}
	j, err := Open(dir, "crash", nil)
	if err != nil {
		t.Fatal(err)
	}
	out := bufio.NewWriter(os.Stdout)
	for i := 0; ; i++ {
		r, err := j.Append(ctx, []byte(fmt.Sprintf(`{"i":%d,"pad":"%s"}`, i, strings.Repeat("p", i%4096))))
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(out, "%d %s\n", r.Seq, r.Hash)
		out.Flush()
	}
}

// TestCrashAppend kills an appending process with SIGKILL at random
// instants: the journal's verified prefix (after an explicit repair of an
// incomplete tail) holds every append that returned, with the reported
// hash.
func TestCrashAppend(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := pdir(t)
	rng := rand.New(rand.NewPCG(3, 4))
	returned := map[uint64]string{}
	repaired := 0
	for round := range 8 {
		child := testkit.StartChild(t, "TestCrashChild", "JOURNAL_CRASH_DIR="+dir)
		done, first := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			sc := bufio.NewScanner(child.Stdout)
			for n := 0; sc.Scan(); n++ {
				var seq uint64
				var hash string
				if _, err := fmt.Sscanf(sc.Text(), "%d %s", &seq, &hash); err == nil {
					returned[seq] = hash
				}
				if n == 0 {
					close(first)
				}
			}
		}()
		// The kill instants are counted from the child's first append, so
		// that a child slow to start under load is not killed before its
		// Open has created the journal the parent then opens.
		select {
		case <-first:
		case <-done:
			t.Fatalf("round %d: the child ended before its first append", round)
		}
		time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
		child.Kill(t)
		<-done
		child.Wait()

		j, err := Open(dir, "crash", nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = j.Verify(ctx)
		if errors.Is(err, ErrIncompleteTail) {
			repaired++
			if _, err := j.Repair(ctx); err != nil {
				t.Fatalf("round %d: repair: %v", round, err)
			}
		} else if err != nil {
			t.Fatalf("round %d: verify: %v", round, err)
		}
		recs, rep, err := j.Read(ctx, 1, 1<<30)
		if err != nil {
			t.Fatalf("round %d: read: %v", round, err)
		}
		for seq, hash := range returned {
			if seq > rep.Records || recs[seq-1].Hash != hash {
				t.Fatalf("round %d: returned append %d (%s) is not in the verified journal of %d records", round, seq, hash, rep.Records)
			}
		}
		j.Close()
	}
	if len(returned) == 0 {
		t.Fatal("no append returned before the kills")
	}
	t.Logf("%d appends returned across 8 kills; %d incomplete tails repaired", len(returned), repaired)
}
