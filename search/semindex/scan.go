package semindex

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"runtime"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// scanSet holds the connections of a parallel scan. Only one search uses
// it at a time; a search that finds it busy scans on one pooled
// connection.
type scanSet struct {
	mu    sync.Mutex
	conns []*sql.Conn
}

// acquire returns up to limits.SemScanParts connections (at least one), or
// nil when another search holds the set.
func (s *scanSet) acquire(ctx context.Context, db *sql.DB) ([]*sql.Conn, error) {
	if !s.mu.TryLock() {
		return nil, nil
	}
	want := max(1, min(runtime.GOMAXPROCS(0), limits.SemScanParts))
	for len(s.conns) < want {
		c, err := db.Conn(ctx)
		if err != nil {
			s.mu.Unlock()
			return nil, dbFault(err, "searching")
		}
		s.conns = append(s.conns, c)
	}
	return s.conns[:want], nil
}

// release ends the read transactions of inTx and frees the set; a
// connection that cannot end its transaction is dropped.
func (s *scanSet) release(inTx []*sql.Conn) {
	bad := map[*sql.Conn]bool{}
	for _, c := range inTx {
		if !endRead(c) {
			bad[c] = true
		}
	}
	kept := s.conns[:0]
	for _, c := range s.conns {
		if bad[c] {
			c.Close()
			continue
		}
		kept = append(kept, c)
	}
	s.conns = kept
	s.mu.Unlock()
}

func (s *scanSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.conns {
		c.Close()
	}
	s.conns = nil
}

// endRead ends a read transaction, reporting whether the connection can be
// reused; one that cannot end it is marked bad so the pool discards it.
func endRead(conn *sql.Conn) bool {
	if _, err := conn.ExecContext(context.Background(), `ROLLBACK`); err != nil {
		conn.Raw(func(any) error { return driver.ErrBadConn })
		return false
	}
	return true
}

// beginRead starts a read transaction on conn and returns the generation
// it sees (its snapshot is taken by that read).
func beginRead(ctx context.Context, conn *sql.Conn) (string, error) {
	if _, err := conn.ExecContext(ctx, `BEGIN`); err != nil {
		return "", dbFault(err, "searching")
	}
	var g string
	if err := conn.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = 'generation'`).Scan(&g); err != nil {
		endRead(conn)
		return "", dbFault(err, "searching")
	}
	return g, nil
}

// snapshot begins a read on every conn and keeps those that see the
// generation the first one sees (a mutation committed in between makes a
// later one differ; it is then left out and the others scan more).
func snapshot(ctx context.Context, conns []*sql.Conn) ([]*sql.Conn, error) {
	g0, err := beginRead(ctx, conns[0])
	if err != nil {
		return nil, err
	}
	// Any that are left out are ended here; the caller ends the rest.
	same := conns[:1]
	for _, c := range conns[1:] {
		g, err := beginRead(ctx, c)
		if err != nil {
			break
		}
		if g != g0 {
			endRead(c)
			break
		}
		same = append(same, c)
	}
	return same, nil
}

// scanParts scores the blocks in [lo, hi] (and, for a scope, in the JSON
// array blocks) split into one id range per connection, each scanned
// concurrently inside SQLite; it returns each part's query.
func scanParts(ctx context.Context, conns []*sql.Conn, proto *activeQuery, blocks string, lo, hi int64) ([]*activeQuery, error) {
	// coalesce evaluates its second argument, and SQLite reads the
	// blobs, only where the first is NULL: a block the cache lacks.
	q := `SELECT coalesce(sum(coalesce(` + cachedFunc + `(?1, id, ver), ` + blockFunc + `(?1, id, ver, ids, vecs))), 0) FROM vec_blocks WHERE id BETWEEN ?3 AND ?4`
	if proto.members != nil {
		q += ` AND id IN (SELECT value FROM json_each(?2))`
	}
	parts := make([]*activeQuery, len(conns))
	errs := make([]error, len(conns))
	span := (hi - lo + 1 + int64(len(conns)) - 1) / int64(len(conns))
	var wg sync.WaitGroup
	for i, c := range conns {
		aq := &activeQuery{ctx: ctx, v: proto.v, norm: proto.norm, members: proto.members, top: topK{k: proto.top.k}, cache: proto.cache, scan: proto.scan}
		parts[i] = aq
		from, to := lo+int64(i)*span, min(hi, lo+int64(i+1)*span-1)
		wg.Go(func() {
			id := nextQuery.Add(1)
			queries.Store(id, aq)
			defer queries.Delete(id)
			errs[i] = c.QueryRowContext(ctx, q, id, blocks, from, to).Scan(&aq.scanned)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err == nil {
			continue
		}
		if parts[i].damaged != nil {
			return nil, fault.Wrap(fault.Integrity, parts[i].damaged, "the index is damaged; run audit")
		}
		return nil, dbFault(err, "searching")
	}
	return parts, nil
}
