package atfile

import "sync"

// lockKey names a file by its directory's identity and its name in it, so
// two names that reach one file through different (symlinked) directories
// share a lock.
type lockKey struct {
	dev, ino uint64
	name     string
}

type lockEntry struct {
	mu   sync.Mutex
	refs int
}

// lockTable hands out per-file mutexes and forgets them when unused.
type lockTable struct {
	mu sync.Mutex
	m  map[lockKey]*lockEntry
}

func (t *lockTable) lock(k lockKey) (unlock func()) {
	t.mu.Lock()
	e := t.m[k]
	if e == nil {
		e = &lockEntry{}
		t.m[k] = e
	}
	e.refs++
	t.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		t.mu.Lock()
		if e.refs--; e.refs == 0 {
			delete(t.m, k)
		}
		t.mu.Unlock()
	}
}

// fileLocks serializes the replacements of one file in this process,
// whichever tool makes them.
var fileLocks = lockTable{m: map[lockKey]*lockEntry{}}
