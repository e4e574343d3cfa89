package lexindex

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit"
)

// The crash and concurrency tests re-run this test binary as children
// that write one index in a loop, selected by childEnv.
const childEnv = "CAPKIT_LEXINDEX_CHILD"

const (
	batchDocs    = 40
	crashRounds  = 12
	writerRounds = 30
)

// versionBatch is batch v of writer w: every document of the writer at
// version v, in one transaction.
func versionBatch(w string, v int) []Mutation {
	b := make([]Mutation, batchDocs)
	for i := range b {
		b[i] = Mutation{Ref: fmt.Sprintf("%s-%02d", w, i), Text: fmt.Sprintf("writer %s version v%d body %d", w, v, i), Digest: "v" + strconv.Itoa(v)}
	}
	return b
}

// TestChild is the children's body; it does nothing in a normal run.
func TestChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("runs only as a child of the crash and concurrency tests")
	}
	path, writer := os.Getenv(childEnv+"_DB"), os.Getenv(childEnv+"_WRITER")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ix, err := Open(ctx, path, &Options{Create: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	rounds := writerRounds
	if mode == "crash" {
		rounds = 1 << 30
	}
	for v := 1; v <= rounds; v++ {
		if _, err := ix.Apply(ctx, versionBatch(writer, v)); err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		if v == 1 {
			fmt.Println("ready")
		}
	}
	fmt.Println("done")
}

// consistent checks that every document of writer w is at one version
// and that the search index agrees with the documents table; it returns
// the version.
func consistent(t *testing.T, path, w string) int {
	t.Helper()
	ctx := context.Background()
	ix, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ix.Close()
	var check string
	if err := ix.read(ctx, func(tx *txn) error {
		if err := tx.row(`PRAGMA integrity_check`).Scan(&check); err != nil {
			return err
		}
		return tx.exec(`INSERT INTO fts(fts) VALUES ('integrity-check')`)
	}); err != nil || check != "ok" {
		t.Fatalf("integrity: %q %v", check, err)
	}
	st := must(ix.Status(ctx, StatusRequest{}))
	version := ""
	for _, d := range st.Refs {
		if version == "" {
			version = d.Digest
		}
		if d.Digest != version {
			t.Fatalf("a mix of versions: %s and %s (%+v)", version, d.Digest, st.Refs)
		}
	}
	if len(st.Refs) != batchDocs {
		t.Fatalf("%d documents, want %d", len(st.Refs), batchDocs)
	}
	hits := must(ix.Search(ctx, Query{Text: version, Limit: limits1000}))
	if len(hits.Hits) != batchDocs {
		t.Fatalf("the search index holds %d documents at %s, want %d", len(hits.Hits), version, batchDocs)
	}
	v, _ := strconv.Atoi(version[1:])
	return v
}

const limits1000 = 1000

func TestCrashDuringBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	path := filepath.Join(t.TempDir(), "crash.db")
	rng := rand.New(rand.NewPCG(7, 8))
	last := 0
	for round := range crashRounds {
		c := testkit.StartChild(t, "TestChild", childEnv+"=crash", childEnv+"_DB="+path, childEnv+"_WRITER=w")
		out := bufio.NewScanner(c.Stdout)
		if !out.Scan() || out.Text() != "ready" {
			c.Kill(t)
			c.Wait()
			t.Fatalf("round %d: child said %q", round, out.Text())
		}
		time.Sleep(time.Duration(rng.IntN(30)) * time.Millisecond)
		c.Kill(t)
		if killed, err := c.Wait(); !killed {
			t.Fatalf("round %d: child ended by itself: %v", round, err)
		}
		v := consistent(t, path, "w")
		if v < 1 {
			t.Fatalf("round %d: version %d", round, v)
		}
		last = v
	}
	t.Logf("last version after %d kills: v%d", crashRounds, last)
}

func TestTwoWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test")
	}
	path := filepath.Join(t.TempDir(), "shared.db")
	// Create the index first, so the writers race on writes, not on the
	// schema.
	ix := must(Open(context.Background(), path, &Options{Create: true}))
	ix.Close()
	var children []*testkit.Child
	for _, w := range []string{"a", "b"} {
		children = append(children, testkit.StartChild(t, "TestChild", childEnv+"=write", childEnv+"_DB="+path, childEnv+"_WRITER="+w))
	}
	for i, c := range children {
		var said []string
		for out := bufio.NewScanner(c.Stdout); out.Scan(); {
			said = append(said, out.Text())
		}
		if killed, err := c.Wait(); killed || err != nil || !slices.Contains(said, "done") {
			t.Fatalf("writer %d: %v, said %q", i, err, said)
		}
	}
	ctx := context.Background()
	ix = must(Open(ctx, path, nil))
	defer ix.Close()
	st := must(ix.Status(ctx, StatusRequest{}))
	if st.Documents != 2*batchDocs {
		t.Fatalf("%d documents", st.Documents)
	}
	for _, d := range st.Refs {
		if d.Digest != "v"+strconv.Itoa(writerRounds) {
			t.Fatalf("%s at %s", d.Ref, d.Digest)
		}
	}
}
