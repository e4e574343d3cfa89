package semindex

import (
	"context"
	"sync"
	"time"

	"github.com/capkit/capkit/limits"
)

// heldIndexes keeps open the indexes the tools open, so that an index's
// cache serves the calls after the first (the pages of a search, an
// agent's next query) instead of every call reading every block from the
// file: at most limits.SemHeldIndexes at once, each closed once unused for
// limits.SemHeldIdle, their caches sharing one budget of
// limits.SemCacheBytes.
//
// An index is held under the identity (device and inode) of its directory
// and of its file as a call resolves them inside its roots, after the
// same checks as OpenIn: a call that finds another file at the path
// (replaced, or removed and made again) opens that one, and the old one is
// closed when its last call ends. While held, the index's file and
// directory stay open, so no other file can take their inode numbers.
type heldIndexes struct {
	mu     sync.Mutex
	budget *cacheBudget
	idle   time.Duration
	open   map[heldKey]*heldIndex
}

type heldKey struct {
	dirDev, dirIno, dev, ino uint64
	name                     string
}

type heldIndex struct {
	ix    *Index
	users int
	idle  *time.Timer // running while users == 0
	// gone is set when the index left open (its path names another file
	// now, or room was needed): it is closed when its last user leaves.
	gone bool
}

func newHeldIndexes() *heldIndexes {
	return &heldIndexes{budget: newCacheBudget(limits.SemCacheBytes), idle: limits.SemHeldIdle, open: map[heldKey]*heldIndex{}}
}

// acquire returns the index at path (resolved and checked as OpenIn does
// with o), held or opened, and the function that ends its use.
func (h *heldIndexes) acquire(ctx context.Context, roots []string, path string, o *OpenOptions) (*Index, func(), error) {
	at, err := resolveIndex(roots, path, o)
	if err != nil {
		return nil, nil, err
	}
	dst, err := at.pin.DirStat()
	if err != nil {
		at.pin.Close()
		return nil, nil, err
	}
	name := at.pin.Name()
	if at.exists {
		if hi, release := h.reuse(heldKey{dst.Dev, dst.Ino, at.st.Dev, at.st.Ino, name}); hi != nil {
			at.pin.Close()
			return hi.ix, release, nil
		}
	}
	ix, err := at.open(ctx, newBlockCache(h.budget))
	if err != nil {
		return nil, nil, err
	}
	st, err := ix.pin.Lstat("", "index")
	if err != nil || at.exists && (st.Dev != at.st.Dev || st.Ino != at.st.Ino) {
		return ix, func() { ix.Close() }, nil // changed while opened: used once
	}
	if release := h.hold(heldKey{dst.Dev, dst.Ino, st.Dev, st.Ino, name}, ix); release != nil {
		return ix, release, nil
	}
	return ix, func() { ix.Close() }, nil
}

// reuse returns the index held under key, counting a user, if there is
// one.
func (h *heldIndexes) reuse(key heldKey) (*heldIndex, func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hi := h.open[key]
	if hi == nil {
		return nil, nil
	}
	hi.users++
	if hi.idle != nil {
		hi.idle.Stop()
		hi.idle = nil
	}
	return hi, h.releaser(key, hi)
}

// hold keeps ix open under key, letting go of the index held at the same
// path with another file, and of an unused one when there is no room;
// nil when every held index is in use.
func (h *heldIndexes) hold(key heldKey, ix *Index) func() {
	var closing []*Index
	defer func() {
		for _, c := range closing {
			c.Close()
		}
	}()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.open[key] != nil {
		return nil // another call opened it meanwhile
	}
	for k, hi := range h.open {
		if k.dirDev == key.dirDev && k.dirIno == key.dirIno && k.name == key.name {
			closing = append(closing, h.letGo(k, hi)...)
		}
	}
	if len(h.open) >= limits.SemHeldIndexes {
		k, hi := h.leastUsed()
		if hi == nil {
			return nil
		}
		closing = append(closing, h.letGo(k, hi)...)
	}
	hi := &heldIndex{ix: ix, users: 1}
	h.open[key] = hi
	return h.releaser(key, hi)
}

// leastUsed returns an unused held index, if there is one (h.mu held).
func (h *heldIndexes) leastUsed() (heldKey, *heldIndex) {
	for k, hi := range h.open {
		if hi.users == 0 {
			return k, hi
		}
	}
	return heldKey{}, nil
}

// letGo takes hi out of the held set and returns it if it is to be closed
// now (unused); else its last user closes it (h.mu held).
func (h *heldIndexes) letGo(key heldKey, hi *heldIndex) []*Index {
	delete(h.open, key)
	hi.gone = true
	if hi.idle != nil {
		hi.idle.Stop()
		hi.idle = nil
	}
	if hi.users == 0 {
		return []*Index{hi.ix}
	}
	return nil
}

// releaser returns the function that ends one use of hi.
func (h *heldIndexes) releaser(key heldKey, hi *heldIndex) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			hi.users--
			closeNow := hi.users == 0 && hi.gone
			if hi.users == 0 && !hi.gone {
				hi.idle = time.AfterFunc(h.idle, func() { h.expire(key, hi) })
			}
			h.mu.Unlock()
			if closeNow {
				hi.ix.Close()
			}
		})
	}
}

// expire closes hi if it is still held and unused.
func (h *heldIndexes) expire(key heldKey, hi *heldIndex) {
	h.mu.Lock()
	if h.open[key] != hi || hi.users != 0 {
		h.mu.Unlock()
		return
	}
	delete(h.open, key)
	hi.idle = nil
	h.mu.Unlock()
	hi.ix.Close()
}
