package semindex

import (
	"slices"
	"sync"
)

// blockCache keeps vector blocks in memory between the searches of one
// Index, so that a search reads from the file only the blocks it has not
// seen at their current version: reading a block out of SQLite (a copy of
// every page from the file, then into the function's argument) costs more
// than scoring it. A block is kept under its id and its version (the
// random ver every write of the block draws), which the scan reads from
// the block's row in its own snapshot: a kept copy is used only for the
// very version the snapshot holds, so a search scores exactly what its
// snapshot stores, whatever was written since.
//
// A block is kept the second time a search reads it at one version, not
// the first: an Index opened for one search copies nothing. The bytes
// kept are bounded by the cache's budget (an Index's own CacheBytes, or
// one the tools share among the indexes they hold open); past it, blocks
// are read from the file as without the cache. A search of the whole
// index lets go of the blocks it no longer finds.
type blockCache struct {
	mu     sync.Mutex
	budget *cacheBudget
	used   int64                  // of the budget, by this cache
	blocks map[int64]*cachedBlock // by block id
	scans  uint64                 // searches begun
}

// cacheBudget bounds the bytes kept by the caches that share it.
type cacheBudget struct {
	mu          sync.Mutex
	limit, used int64
}

func newCacheBudget(limit int64) *cacheBudget { return &cacheBudget{limit: limit} }

// take reserves n bytes, if they fit.
func (b *cacheBudget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.limit {
		return false
	}
	b.used += n
	return true
}

func (b *cacheBudget) give(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
}

// cachedBlock is a block seen at version ver: kept when vecs is not nil,
// with the squared norm of each vector (as dotNormBlock sums it), so that
// a search of the kept copy computes only the dot products.
type cachedBlock struct {
	ver       int64
	ids, vecs []byte
	norms     []float32
	// lastScan is the last search that found the block.
	lastScan uint64
}

func (b *cachedBlock) size() int64 { return int64(len(b.ids) + len(b.vecs) + 4*len(b.norms)) }

func newBlockCache(budget *cacheBudget) *blockCache {
	return &blockCache{budget: budget, blocks: map[int64]*cachedBlock{}}
}

// begin numbers a search.
func (c *blockCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.scans++
	return c.scans
}

// get returns the kept copy of block id at version ver, if there is one.
func (c *blockCache) get(id, ver int64, scan uint64) (*cachedBlock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.blocks[id]
	if b == nil || b.ver != ver || b.vecs == nil {
		return nil, false
	}
	b.lastScan = scan
	return b, true
}

// offer tells the cache that a search read block id at version ver from
// the file, with the squared norms of its vectors (ids, vecs and norms
// are valid only during the call): the first time it is noted, the
// second time kept if it fits.
func (c *blockCache) offer(id, ver int64, ids, vecs []byte, norms []float32, scan uint64) {
	kept := &cachedBlock{ver: ver, ids: ids, vecs: vecs, norms: norms}
	size := kept.size()
	if !c.note(id, ver, scan) || !c.budget.take(size) {
		return
	}
	kept.ids, kept.vecs, kept.norms = slices.Clone(ids), slices.Clone(vecs), slices.Clone(norms)
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.blocks[id]
	if b == nil || b.ver != ver || b.vecs != nil {
		c.budget.give(size) // changed meanwhile
		return
	}
	kept.lastScan = b.lastScan
	c.blocks[id] = kept
	c.used += size
}

// note records a read of block id at version ver and reports whether it
// was noted before at that version and is not kept yet.
func (c *blockCache) note(id, ver int64, scan uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.blocks[id]
	if b == nil || b.ver != ver {
		if b != nil {
			c.drop(b)
		}
		c.blocks[id] = &cachedBlock{ver: ver, lastScan: scan}
		return false
	}
	b.lastScan = scan
	return b.vecs == nil
}

// drop gives back what b holds of the budget (c.mu held).
func (c *blockCache) drop(b *cachedBlock) {
	if b.vecs != nil {
		c.used -= b.size()
		c.budget.give(b.size())
	}
}

// sweep drops the blocks that no search since scan (one of the whole
// index, complete) has found: they are gone from the index.
func (c *blockCache) sweep(scan uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, b := range c.blocks {
		if b.lastScan < scan {
			c.drop(b)
			delete(c.blocks, id)
		}
	}
}

// close lets go of every block and gives its bytes back to the budget.
func (c *blockCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.budget.give(c.used)
	c.used = 0
	clear(c.blocks)
}
