package pgstore

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// Reader answers a reader's questions about the store: an audit.Source.
// Its cursors are row ids (the order rows arrived in). It verifies each
// stream's chain in the background as rows arrive.
type Reader struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	changed chan struct{}
	last    int64 // the newest id seen
	chain   chainState
	names   struct {
		at            time.Time
		actors, tools []string
	}

	stop chan struct{}
	done chan struct{}
}

// chainState is the verifier's: each stream's last verified record, the
// rows waiting for a record before them, and the first break.
type chainState struct {
	upTo    int64 // rows up to this id were read
	total   uint64
	records uint64
	streams map[string]*streamChain
	broken  string
}

type streamChain struct {
	seq     uint64
	head    string
	waiting map[uint64]journal.Record
}

// OpenReader opens a reader of the store at url; it does not make the
// table (a store nobody wrote to yet reads as empty).
func OpenReader(ctx context.Context, url string) (*Reader, error) {
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, err
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "pgstore: the store URL is not usable")
	}
	r := &Reader{pool: pool, changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{}),
		chain: chainState{streams: map[string]*streamChain{}}}
	go r.watch()
	return r, nil
}

// Close stops the reader.
func (r *Reader) Close() error {
	close(r.stop)
	<-r.done
	r.pool.Close()
	return nil
}

// watch polls for new rows, tells Changed, and verifies what arrived.
func (r *Reader) watch() {
	defer close(r.done)
	tick := time.NewTicker(limits.AuditPollInterval)
	defer tick.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.stop
		cancel()
	}()
	for {
		if last, err := r.Position(ctx); err == nil {
			id, _ := strconv.ParseInt(last, 10, 64)
			r.mu.Lock()
			if id > r.last {
				r.last = id
				close(r.changed)
				r.changed = make(chan struct{})
			}
			r.mu.Unlock()
		}
		r.verify(ctx)
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

// Changed returns a channel closed when rows arrive.
func (r *Reader) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// where is the SQL condition and arguments of f, after the arguments
// already given.
func where(f audit.Filter, args []any) (string, []any) {
	var conds []string
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, strings.ReplaceAll(cond, "?", "$"+strconv.Itoa(len(args))))
	}
	if f.Actor != "" {
		add("actor = ?", f.Actor)
	}
	if f.Tool != "" {
		add("tool = ?", f.Tool)
	}
	switch f.Outcome {
	case "":
	case audit.OutcomeError:
		conds = append(conds, "msg = 'call' AND outcome <> 'ok'")
	default:
		add("msg = 'call' AND outcome = ?", f.Outcome)
	}
	if !f.From.IsZero() {
		add("at >= ?", f.From)
	}
	if !f.To.IsZero() {
		add("at < ?", f.To)
	}
	if len(conds) == 0 {
		return "TRUE", args
	}
	return strings.Join(conds, " AND "), args
}

// missingTable reports whether err is the table not existing yet.
func missingTable(err error) bool { return err != nil && strings.Contains(err.Error(), "42P01") }

func (r *Reader) query(ctx context.Context, q string, args ...any) (pgx.Rows, error) {
	ctx, cancel := context.WithTimeout(ctx, limits.AuditStoreTimeout)
	rows, err := r.pool.Query(ctx, q, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	return cancelRows{rows, cancel}, nil
}

type cancelRows struct {
	pgx.Rows
	cancel func()
}

func (c cancelRows) Close() { c.Rows.Close(); c.cancel() }

// events reads rows of (id, event).
func events(rows pgx.Rows) ([]*audit.Event, []int64, error) {
	defer rows.Close()
	var out []*audit.Event
	var ids []int64
	for rows.Next() {
		var id int64
		var ev string
		if err := rows.Scan(&id, &ev); err != nil {
			return nil, nil, err
		}
		e, err := audit.Decode([]byte(ev))
		if err != nil {
			return nil, nil, err
		}
		out = append(out, e)
		ids = append(ids, id)
	}
	return out, ids, rows.Err()
}

// Events is a window of events f selects, newest first.
func (r *Reader) Events(ctx context.Context, f audit.Filter, cursor string, limit int) (*audit.Page, error) {
	cond, args := where(f, nil)
	if cursor != "" {
		id, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil {
			return nil, fault.New(fault.InvalidInput, "cursor %q is not one this store gave", cursor)
		}
		args = append(args, id)
		cond += " AND id < $" + strconv.Itoa(len(args))
	}
	rows, err := r.query(ctx, "SELECT id, event FROM capkit_audit WHERE "+cond+" ORDER BY id DESC LIMIT "+strconv.Itoa(limit+1), args...)
	if missingTable(err) {
		return &audit.Page{}, nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	evs, ids, err := events(rows)
	if err != nil {
		return nil, unavailable(err)
	}
	p := &audit.Page{Events: evs}
	if len(evs) > limit {
		p.Events, p.Next = evs[:limit], strconv.FormatInt(ids[limit-1], 10)
	}
	return p, nil
}

// After is the events f selects that arrived after cursor, oldest first.
func (r *Reader) After(ctx context.Context, f audit.Filter, cursor string, limit int) ([]*audit.Event, string, error) {
	from, err := strconv.ParseInt(cmp.Or(cursor, "0"), 10, 64)
	if err != nil {
		return nil, cursor, fault.New(fault.InvalidInput, "cursor %q is not one this store gave", cursor)
	}
	top, err := r.Position(ctx)
	if err != nil {
		return nil, cursor, err
	}
	upTo, _ := strconv.ParseInt(top, 10, 64)
	if upTo <= from {
		return nil, cursor, nil
	}
	cond, args := where(f, []any{from, upTo})
	rows, err := r.query(ctx, "SELECT id, event FROM capkit_audit WHERE id > $1 AND id <= $2 AND "+cond+" ORDER BY id LIMIT "+strconv.Itoa(limit), args...)
	if err != nil {
		return nil, cursor, unavailable(err)
	}
	evs, ids, err := events(rows)
	if err != nil {
		return nil, cursor, unavailable(err)
	}
	if len(evs) == limit {
		return evs, strconv.FormatInt(ids[len(ids)-1], 10), nil
	}
	return evs, top, nil
}

// Position is the id of the newest row, "0" in an empty store.
func (r *Reader) Position(ctx context.Context) (string, error) {
	rows, err := r.query(ctx, "SELECT coalesce(max(id), 0) FROM capkit_audit")
	if missingTable(err) {
		return "0", nil
	}
	if err != nil {
		return "", unavailable(err)
	}
	defer rows.Close()
	var id int64
	if rows.Next() {
		if err := rows.Scan(&id); err != nil {
			return "", unavailable(err)
		}
	}
	if err := rows.Err(); err != nil {
		if missingTable(err) {
			return "0", nil
		}
		return "", unavailable(err)
	}
	return strconv.FormatInt(id, 10), nil
}

// Stats counts the calls f selects, in SQL.
func (r *Reader) Stats(ctx context.Context, f audit.Filter) (*audit.Stats, error) {
	st := &audit.Stats{}
	var err error
	if st.Tools, err = r.groups(ctx, "tool", f); err != nil {
		return nil, err
	}
	if st.Actors, err = r.groups(ctx, "actor", f); err != nil {
		return nil, err
	}
	for _, g := range st.Tools {
		st.Calls += g.Calls
		st.Errors += g.Errors
		st.Denials += g.Denials
		st.Limits += g.Limits
	}
	if st.Policies, err = r.policies(ctx, f); err != nil {
		return nil, err
	}
	if st.Buckets, st.BucketSeconds, err = r.buckets(ctx, f); err != nil {
		return nil, err
	}
	return st, nil
}

func (r *Reader) groups(ctx context.Context, col string, f audit.Filter) ([]audit.Group, error) {
	cond, args := where(f, nil)
	rows, err := r.query(ctx, `SELECT `+col+`, count(*), count(*) FILTER (WHERE outcome <> 'ok'),
		count(*) FILTER (WHERE outcome = 'denied'), count(*) FILTER (WHERE outcome = 'limit'),
		percentile_disc(ARRAY[0.5, 0.95, 0.99]) WITHIN GROUP (ORDER BY duration_us)
		FROM capkit_audit WHERE msg = 'call' AND `+cond+` GROUP BY `+col+` ORDER BY count(*) DESC, `+col, args...)
	if missingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []audit.Group
	for rows.Next() {
		var g audit.Group
		var p []int64
		if err := rows.Scan(&g.Name, &g.Calls, &g.Errors, &g.Denials, &g.Limits, &p); err != nil {
			return nil, unavailable(err)
		}
		if len(p) == 3 {
			g.P50, g.P95, g.P99 = p[0], p[1], p[2]
		}
		out = append(out, g)
	}
	return out, unavailable(rows.Err())
}

func (r *Reader) policies(ctx context.Context, f audit.Filter) ([]audit.Count, error) {
	cond, args := where(f, nil)
	rows, err := r.query(ctx, "SELECT policy, count(*) FROM capkit_audit WHERE msg = 'call' AND policy <> '' AND "+cond+
		" GROUP BY policy ORDER BY count(*) DESC, policy LIMIT 50", args...)
	if missingTable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(err)
	}
	defer rows.Close()
	var out []audit.Count
	for rows.Next() {
		var c audit.Count
		if err := rows.Scan(&c.Name, &c.Calls); err != nil {
			return nil, unavailable(err)
		}
		out = append(out, c)
	}
	return out, unavailable(rows.Err())
}

// buckets are the calls over the time f's calls span.
func (r *Reader) buckets(ctx context.Context, f audit.Filter) ([]audit.Bucket, int64, error) {
	cond, args := where(f, nil)
	rows, err := r.query(ctx, "SELECT min(at), max(at) FROM capkit_audit WHERE msg = 'call' AND "+cond, args...)
	if missingTable(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, unavailable(err)
	}
	var lo, hi *time.Time
	for rows.Next() {
		if err := rows.Scan(&lo, &hi); err != nil {
			rows.Close()
			return nil, 0, unavailable(err)
		}
	}
	rows.Close()
	if lo == nil || hi == nil {
		return nil, 0, unavailable(rows.Err())
	}
	size := audit.BucketSize(*lo, *hi, limits.AuditBuckets)
	secs := int64(size / time.Second)
	start := lo.Unix() - lo.Unix()%secs
	n := int((hi.Unix()-start)/secs) + 1
	out := make([]audit.Bucket, n)
	for i := range out {
		out[i].Start = time.Unix(start+int64(i)*secs, 0).UTC()
	}
	args = append(args, secs)
	rows, err = r.query(ctx, "SELECT floor(extract(epoch FROM at) / $"+strconv.Itoa(len(args))+")::bigint, count(*), count(*) FILTER (WHERE outcome <> 'ok') FROM capkit_audit WHERE msg = 'call' AND "+cond+" GROUP BY 1", args...)
	if err != nil {
		return nil, 0, unavailable(err)
	}
	defer rows.Close()
	for rows.Next() {
		var b, calls, errs int64
		if err := rows.Scan(&b, &calls, &errs); err != nil {
			return nil, 0, unavailable(err)
		}
		if i := b - start/secs; i >= 0 && i < int64(n) {
			out[i].Calls, out[i].Errors = calls, errs
		}
	}
	return out, secs, unavailable(rows.Err())
}

// Names are the actors and tools in the store, asked again at most every
// few seconds.
func (r *Reader) Names(ctx context.Context) ([]string, []string, error) {
	r.mu.Lock()
	if time.Since(r.names.at) < limits.AuditNamesMaxAge {
		a, t := r.names.actors, r.names.tools
		r.mu.Unlock()
		return a, t, nil
	}
	r.mu.Unlock()
	var lists [2][]string
	for i, col := range []string{"actor", "tool"} {
		// A loose index scan: one probe per distinct value, not a read of
		// every row.
		rows, err := r.query(ctx, `WITH RECURSIVE d(v) AS (
			(SELECT `+col+` FROM capkit_audit ORDER BY `+col+` LIMIT 1)
			UNION ALL
			SELECT (SELECT `+col+` FROM capkit_audit WHERE `+col+` > d.v ORDER BY `+col+` LIMIT 1) FROM d WHERE d.v IS NOT NULL)
			SELECT v FROM d WHERE v IS NOT NULL AND v <> '' LIMIT `+strconv.Itoa(limits.AuditMaxNames))
		if missingTable(err) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, unavailable(err)
		}
		for rows.Next() {
			var v string
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return nil, nil, unavailable(err)
			}
			lists[i] = append(lists[i], v)
		}
		rows.Close()
	}
	r.mu.Lock()
	r.names.at, r.names.actors, r.names.tools = time.Now(), lists[0], lists[1]
	r.mu.Unlock()
	return lists[0], lists[1], nil
}

// Chain is what the verifier found so far.
func (r *Reader) Chain(context.Context) (*audit.ChainState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.chain
	st := &audit.ChainState{Records: c.records, Total: c.total, Streams: len(c.streams), Broken: c.broken}
	for _, s := range c.streams {
		st.Missing += uint64(len(s.waiting))
	}
	return st, nil
}

// verify reads the rows that arrived since it last did, a bounded number
// a round, and checks each stream's chain: every row must be the record
// its hash binds, each record chained to the one before in its stream.
// A row whose predecessor has not arrived (a spool not yet delivered)
// waits for it.
func (r *Reader) verify(ctx context.Context) {
	for range limits.AuditVerifyRounds {
		r.mu.Lock()
		from := r.chain.upTo
		r.mu.Unlock()
		rows, err := r.query(ctx, "SELECT id, stream, seq, prev, hash, event FROM capkit_audit WHERE id > $1 ORDER BY id LIMIT $2",
			from, limits.AuditVerifyBatch)
		if err != nil {
			return
		}
		n := 0
		for rows.Next() {
			var id, seq int64
			var stream, prev, hash, event string
			if err := rows.Scan(&id, &stream, &seq, &prev, &hash, &event); err != nil {
				break
			}
			n++
			r.mu.Lock()
			r.chain.add(stream, journal.Record{Seq: uint64(seq), Prev: prev, Hash: hash, Event: []byte(event)}, id)
			r.mu.Unlock()
		}
		rows.Close()
		if n < limits.AuditVerifyBatch {
			return
		}
	}
}

// add checks one row of a stream, and those waiting for it.
func (c *chainState) add(stream string, rec journal.Record, id int64) {
	c.upTo = id
	c.total++
	s := c.streams[stream]
	if s == nil {
		s = &streamChain{head: journal.Genesis, waiting: map[uint64]journal.Record{}}
		c.streams[stream] = s
	}
	if c.broken != "" {
		return
	}
	line, _ := journal.EncodeRecord(rec.Seq, rec.Prev, rec.Event)
	if got, err := journal.DecodeRecord(line[:len(line)-1], limits.AuditMaxEventBytes); err != nil || got.Hash != rec.Hash {
		c.broken = fmt.Sprintf("stream %s record %d (row %d) was changed: it is not what its hash binds", stream, rec.Seq, id)
		return
	}
	if _, twice := s.waiting[rec.Seq]; twice || rec.Seq <= s.seq {
		c.broken = fmt.Sprintf("stream %s record %d appears twice (row %d)", stream, rec.Seq, id)
		return
	}
	s.waiting[rec.Seq] = rec
	for {
		next, ok := s.waiting[s.seq+1]
		if !ok {
			return
		}
		delete(s.waiting, s.seq+1)
		if next.Prev != s.head {
			c.broken = fmt.Sprintf("stream %s record %d does not chain to record %d: one of them was changed", stream, next.Seq, s.seq)
			return
		}
		s.seq, s.head = next.Seq, next.Hash
		c.records++
	}
}

func unavailable(err error) error {
	if err == nil {
		return nil
	}
	return fault.Wrap(fault.Unavailable, err, "the audit store cannot be read")
}
