package tools

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// read_file's output buffers are reused, so a read neither zeroes nor
// page-faults a fresh buffer (BenchmarkReadFile4MiB, BenchmarkReadFileSmall).
// A buffer goes back to the pool only when the result's
// consumer releases it (kernel.Result.Release, after the transport wrote
// it); results never released leave their buffer to the garbage collector.

// minPooledOut is the smallest buffer worth pooling; smaller ones are
// allocated as needed. Small reads pool too.
const minPooledOut = 1 << 10

// outBuf is a pooled output buffer. gen counts its leases: a release puts
// it back only if it is still the lease the release was given for, so a
// second release of the same result does nothing, even after the buffer
// was leased again.
type outBuf struct {
	b   []byte
	gen atomic.Uint64
}

// outLease is one use of an outBuf, or none (ob nil).
type outLease struct {
	ob  *outBuf
	gen uint64
}

// outPools holds buffers by size class: class k holds capacities in
// [2^k, 2^(k+1)).
var outPools [48]sync.Pool

// leaseOut returns an empty buffer of capacity at least n and its lease
// (none below minPooledOut).
func leaseOut(n int) ([]byte, outLease) {
	if n < minPooledOut {
		return make([]byte, 0, n), outLease{}
	}
	k := bits.Len(uint(n)) - 1
	// Class k may hold buffers smaller than n; class k+1 never does.
	for _, c := range []int{k, k + 1} {
		if c >= len(outPools) {
			break
		}
		if ob, _ := outPools[c].Get().(*outBuf); ob != nil {
			gen := ob.gen.Load() // before ob.b: the release's store comes first
			if cap(ob.b) >= n {
				return ob.b[:0], outLease{ob: ob, gen: gen}
			}
			outPools[c].Put(ob)
		}
	}
	ob := &outBuf{b: make([]byte, 0, n)}
	return ob.b, outLease{ob: ob}
}

// keep records that the lease's buffer is now b (grown by append), so the
// buffer that goes back to the pool is the one in use.
func (l outLease) keep(b []byte) {
	if l.ob != nil && cap(b) >= minPooledOut {
		l.ob.b = b[:0]
	}
}

// release ends the lease: the buffer goes back to the pool, unless the
// lease was already released.
func (l outLease) release() {
	ob := l.ob
	if ob == nil || !ob.gen.CompareAndSwap(l.gen, l.gen+1) {
		return
	}
	k := bits.Len(uint(cap(ob.b))) - 1
	if k < len(outPools) {
		outPools[k].Put(ob)
	}
}
