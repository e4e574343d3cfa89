package semindex

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit"
)

// Two versions of one source, of different chunk counts.
var (
	versionA = strings.Repeat("Alpha version of the document, with naïve words. ", 40)
	versionB = strings.Repeat("Beta version: 東京 and façades in a longer text. ", 90)
)

// TestChildWriter is the body of the child processes below.
func TestChildWriter(t *testing.T) {
	db, mode := os.Getenv("CAPKIT_SEMINDEX_DB"), os.Getenv("CAPKIT_SEMINDEX_MODE")
	if db == "" {
		t.Skip("child body of TestCrashDuringAdd and TestTwoWriters")
	}
	ctx := context.Background()
	m := tiny(t)
	ix, err := Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	if mode == "flip" {
		for i := 0; ; i++ {
			text := versionA
			if i%2 == 0 {
				text = versionB
			}
			if _, err := ix.Add(ctx, m, "doc", text, nil); err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	}
	for i := range 15 {
		if _, err := ix.Add(ctx, m, fmt.Sprintf("%s-%d", mode, i), versionA[:100+i], nil); err != nil {
			t.Fatal(err)
		}
	}
}

// checkConsistent requires every ref's recorded chunk count to match its
// rows and its text to be one of the versions, and a clean audit.
func checkConsistent(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	ix, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var bad int
	if err := ix.db.QueryRowContext(ctx, `SELECT count(*) FROM refs r WHERE r.chunks != (SELECT count(*) FROM chunks c WHERE c.ref_id = r.id)`).Scan(&bad); err != nil || bad != 0 {
		t.Fatalf("refs whose chunks do not match: %d (%v)", bad, err)
	}
	rep, err := ix.Audit(ctx, tiny(t))
	if err != nil || !rep.OK {
		t.Fatalf("audit after the crash: %+v %v", rep, err)
	}
}

func TestCrashDuringAdd(t *testing.T) {
	path := filepath.Join(t.TempDir(), "crash.db")
	ix, _ := Open(context.Background(), path, nil)
	if _, err := ix.Add(context.Background(), tiny(t), "doc", versionA, nil); err != nil {
		t.Fatal(err)
	}
	ix.Close()
	for round := range 4 {
		c := testkit.StartChild(t, "TestChildWriter", "CAPKIT_SEMINDEX_DB="+path, "CAPKIT_SEMINDEX_MODE=flip")
		line, _ := bufio.NewReader(c.Stdout).ReadString('\n')
		if line != "ready\n" {
			c.Kill(t)
			c.Wait()
			t.Fatalf("child: %q", line)
		}
		time.Sleep(time.Duration(rand.IntN(30)) * time.Millisecond)
		c.Kill(t)
		if killed, err := c.Wait(); !killed {
			t.Fatalf("round %d: the child was not killed: %v", round, err)
		}
		checkConsistent(t, path)
		st, _ := openStatus(t, path)
		if st.Refs != 1 {
			t.Fatalf("round %d: %d refs", round, st.Refs)
		}
	}
}

func openStatus(t *testing.T, path string) (*Status, error) {
	ix, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	return ix.Status(context.Background(), nil)
}

func TestTwoWriters(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two.db")
	ix, _ := Open(context.Background(), path, nil)
	ix.Close()
	a := testkit.StartChild(t, "TestChildWriter", "CAPKIT_SEMINDEX_DB="+path, "CAPKIT_SEMINDEX_MODE=p1")
	b := testkit.StartChild(t, "TestChildWriter", "CAPKIT_SEMINDEX_DB="+path, "CAPKIT_SEMINDEX_MODE=p2")
	for _, c := range []*testkit.Child{a, b} {
		if _, err := c.Wait(); err != nil {
			t.Fatalf("writer: %v", err)
		}
	}
	st, err := openStatus(t, path)
	if err != nil || st.Refs != 30 {
		t.Fatalf("after two writers: %+v %v", st, err)
	}
	checkConsistent(t, path)
}
