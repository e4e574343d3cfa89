package semindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// acquireTB acquires the index at path in root through h, failing t on
// error.
func acquireTB(t *testing.T, h *heldIndexes, root, path string, create bool) (*Index, func()) {
	t.Helper()
	ix, release, err := h.acquire(context.Background(), []string{root}, path, &OpenOptions{NoCreate: !create})
	if err != nil {
		t.Fatal(err)
	}
	return ix, release
}

func closed(ix *Index) bool { return ix.db.Ping() != nil }

// TestHeldIndexReused: the tools' calls on one index file share one open
// Index, with OpenIn's checks at every call, until the path names another
// file: then that one is opened, and the old one closed.
func TestHeldIndexReused(t *testing.T) {
	root := t.TempDir()
	h := newHeldIndexes()
	a, release := acquireTB(t, h, root, "a.db", true)
	release()
	b, release := acquireTB(t, h, root, "a.db", false)
	release()
	if a != b || closed(a) {
		t.Fatalf("a second call opened another index (%p, %p), or closed it", a, b)
	}
	_, _, err := h.acquire(context.Background(), []string{root}, "../a.db", nil)
	wantCode(t, "a held index's path climbing out", err, fault.Denied)
	for _, s := range sidecars {
		os.Remove(filepath.Join(root, "a.db"+s))
	}
	_, _, err = h.acquire(context.Background(), []string{root}, "a.db", &OpenOptions{NoCreate: true})
	wantCode(t, "a held index removed", err, fault.NotFound)
	c, release := acquireTB(t, h, root, "a.db", true)
	defer release()
	if c == a || !closed(a) || len(h.open) != 1 {
		t.Fatalf("after the file was made again: same index %v, old one closed %v, %d held", c == a, closed(a), len(h.open))
	}
}

// TestHeldIndexIdle: an index no call uses is closed after the idle time,
// and one in use is not.
func TestHeldIndexIdle(t *testing.T) {
	root := t.TempDir()
	h := newHeldIndexes()
	h.idle = 20 * time.Millisecond
	a, release := acquireTB(t, h, root, "a.db", true)
	b, releaseB := acquireTB(t, h, root, "b.db", true)
	release()
	deadline := time.Now().Add(10 * time.Second)
	for !closed(a) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if !closed(a) || closed(b) {
		t.Fatalf("unused index closed %v, index in use closed %v", closed(a), closed(b))
	}
	releaseB()
	releaseB() // a second release does nothing
}

// TestHeldIndexesBound: at most limits.SemHeldIndexes indexes stay open;
// past it an unused one is closed, and when all are in use the next is
// used once.
func TestHeldIndexesBound(t *testing.T) {
	root := t.TempDir()
	h := newHeldIndexes()
	var inUse []func()
	var first *Index
	for i := range limits.SemHeldIndexes {
		ix, release := acquireTB(t, h, root, fmt.Sprint(i, ".db"), true)
		if i == 0 {
			first = ix
			release()
			continue
		}
		inUse = append(inUse, release)
	}
	extra, release := acquireTB(t, h, root, "extra.db", true)
	if len(h.open) != limits.SemHeldIndexes || !closed(first) {
		t.Fatalf("%d held after one past the bound, the unused one closed %v", len(h.open), closed(first))
	}
	inUse = append(inUse, release)
	once, release := acquireTB(t, h, root, "once.db", true)
	release()
	if len(h.open) != limits.SemHeldIndexes || !closed(once) || closed(extra) {
		t.Fatalf("with all in use: %d held, the extra one closed after its call %v", len(h.open), closed(once))
	}
	for _, r := range inUse {
		r()
	}
}

// TestHeldIndexCache: searches through the held index are served from
// its cache, exactly, within the shared budget.
func TestHeldIndexCache(t *testing.T) {
	root := t.TempDir()
	h := newHeldIndexes()
	ix, release := acquireTB(t, h, root, "v.db", true)
	blockVectors = 6
	t.Cleanup(func() { blockVectors = limits.SemBlockVectors })
	rng := rand.New(rand.NewPCG(21, 22))
	for r := range 10 {
		putRef(t, ix, fmt.Sprint("ref", r), 7, rng)
	}
	release()
	q := randomQuery(rng)
	for i := range 3 {
		ix, release := acquireTB(t, h, root, "v.db", false)
		checkRank(t, fmt.Sprint("held, search ", i), ix, q, 20, "", nil)
		release()
	}
	if ix.cache.used == 0 || h.budget.used != ix.cache.used {
		t.Fatalf("cache holds %d bytes, the budget counts %d", ix.cache.used, h.budget.used)
	}
	ix.Close()
	if h.budget.used != 0 {
		t.Fatalf("a closed index still counts %d bytes", h.budget.used)
	}
}
