package pgstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// Options configure a Store.
type Options struct {
	// Spool is the directory where events wait while the store cannot be
	// reached (created 0700 when missing). Required.
	Spool string
	// SpoolMaxBytes bounds this process's spool; zero means
	// limits.AuditDefaultSpoolBytes.
	SpoolMaxBytes int64
	// Log receives what the store's operator should know (the store
	// unreachable, events lost); nil discards it.
	Log *slog.Logger
	// Lost, if set, is told, once the store answers again (or when the
	// store closes), how many events could not be kept since it was last
	// told.
	Lost func(n int64)
}

// Stats are a store's counts.
type Stats struct {
	Stream      string `json:"stream"`
	Reachable   bool   `json:"reachable"`
	LastError   string `json:"last_error,omitempty"`
	Sent        int64  `json:"sent"`
	Queued      int    `json:"queued"`
	SpoolEvents int64  `json:"spool_events"`
	SpoolBytes  int64  `json:"spool_bytes"`
	Lost        int64  `json:"lost"`
}

// Store writes a trail to PostgreSQL: an audit.Sink.
type Store struct {
	pool   *pgxpool.Pool
	stream string
	host   string
	o      Options
	log    *slog.Logger
	spool  *spool

	mu     sync.Mutex // orders numbering with the queue and the spool
	closed bool       // Close has taken the queue: later events are lost
	seq    uint64
	head   string
	queue  chan row
	record []byte // the record Write made last, its buffer reused

	lost     atomic.Int64
	reported int64 // lost events handed to Options.Lost (the sender's)
	sent     atomic.Int64
	// pending counts the events numbered and not yet in the store: queued,
	// in the sender's batch, or in this process's spool.
	pending   atomic.Int64
	reachable atomic.Bool
	lastErr   atomic.Pointer[string]
	outage    atomic.Bool // a loss was logged in this outage

	ready   bool // the sender made sure of the table
	kick    chan struct{}
	closing chan struct{}
	done    chan struct{}
	held    []row // the sender's batch when it stopped
	args    args  // the sender's (Close's, once it stopped) insert parameters
}

// row is one event as the store holds it.
type row struct {
	seq                                 int64
	prev, hash                          string
	at                                  time.Time
	msg, actor, tool, outcome, policy   string
	durationUS, inBytes, outBytes, left int64
	event                               string
}

// record is r's line as the spool holds it.
func (r *row) record() []byte {
	line, _ := journal.EncodeRecord(uint64(r.seq), r.prev, []byte(r.event))
	return line
}

// Open starts a store writer on the PostgreSQL server at url. It does not
// wait for the server: the sender connects, makes the table when it is
// missing and delivers any spool left behind, in the background.
func Open(url string, opts *Options) (*Store, error) {
	if opts == nil || opts.Spool == "" {
		return nil, fault.New(fault.InvalidInput, "pgstore: a spool directory is required")
	}
	cfg, err := poolConfig(url)
	if err != nil {
		return nil, err
	}
	s := &Store{o: *opts, head: journal.Genesis, queue: make(chan row, limits.AuditQueueEvents),
		kick: make(chan struct{}, 1), closing: make(chan struct{}), done: make(chan struct{})}
	if s.o.SpoolMaxBytes == 0 {
		s.o.SpoolMaxBytes = limits.AuditDefaultSpoolBytes
	}
	s.log = s.o.Log
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var id [8]byte
	rand.Read(id[:])
	s.stream = hex.EncodeToString(id[:])
	s.host, _ = os.Hostname()
	if s.spool, err = openSpool(s.o.Spool, s.stream, s.host, s.o.SpoolMaxBytes); err != nil {
		return nil, err
	}
	if s.pool, err = pgxpool.NewWithConfig(context.Background(), cfg); err != nil {
		return nil, fault.Wrap(fault.InvalidInput, err, "pgstore: the store URL is not usable")
	}
	go s.run()
	return s, nil
}

// Stream is the id of this writer's chain in the store.
func (s *Store) Stream() string { return s.stream }

// Stats are the store's counts.
func (s *Store) Stats() Stats {
	st := Stats{Stream: s.stream, Reachable: s.reachable.Load(), Sent: s.sent.Load(), Queued: len(s.queue), Lost: s.lost.Load()}
	if e := s.lastErr.Load(); e != nil && !st.Reachable {
		st.LastError = *e
	}
	st.SpoolEvents, st.SpoolBytes = s.spool.size()
	return st
}

// Write numbers and chains e and queues it for the sender, or spools it
// when the queue is full; an event that fits neither is counted lost
// (and takes no number, so the chain has no gap for it).
func (s *Store) Write(e *audit.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.lost.Add(1)
		return
	}
	seq := s.seq + 1
	var hash string
	s.record, hash = journal.AppendRecord(s.record[:0], seq, s.head, e.JSON)
	r := row{seq: int64(seq), prev: s.head, hash: hash, at: e.Time, msg: e.Msg, actor: e.Actor, tool: e.Tool,
		outcome: e.Outcome, policy: e.Policy, durationUS: e.DurationUS, inBytes: e.InBytes, outBytes: e.OutBytes,
		left: e.CallsLeft, event: string(e.JSON)}
	select {
	case s.queue <- r:
	default:
		if err := s.spool.append(s.record); err != nil {
			s.lose(1, err)
			return
		}
	}
	s.pending.Add(1)
	s.seq, s.head = seq, hash
}

// lose counts n events that could not be kept, logging the first of an
// outage.
func (s *Store) lose(n int64, why error) {
	s.lost.Add(n)
	if !s.outage.Swap(true) {
		s.log.Error("audit: events are being lost: the store cannot be reached and the spool is full",
			slog.String("stream", s.stream), slog.String("why", why.Error()))
	}
}

// run is the sender: it delivers what the spools hold whenever the store
// answers, then what the queue holds, batch by batch, keeping a batch
// that failed until it is taken.
func (s *Store) run() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-s.done:
		}
	}()
	var batch []row
	wait := limits.AuditRetryMin
	spoolDue := true // there may be spools to deliver (ours, or left behind)
	for {
		if len(batch) == 0 && !spoolDue {
			select {
			case r := <-s.queue:
				batch = append(batch, r)
				spoolDue = s.linger()
			case <-s.kick:
				spoolDue = true
				continue
			case <-s.closing:
				return
			}
		}
		batch = s.fill(batch)
		err := s.deliver(ctx, batch, spoolDue)
		if err == nil {
			batch, spoolDue, wait = batch[:0], false, limits.AuditRetryMin
			s.recovered()
			continue
		}
		if ctx.Err() != nil {
			s.held = batch
			return
		}
		s.failed(err)
		spoolDue = true
		select {
		case <-time.After(wait):
		case <-s.closing:
			s.held = batch
			return
		}
		wait = min(2*wait, limits.AuditRetryMax)
	}
}

// linger waits limits.AuditStoreLinger after an event arrived in an
// empty queue, so that the events of that time are inserted together
// rather than one statement each; not when a batch is already queued,
// nor past a Flush (true: it asked for the spools too) or Close.
func (s *Store) linger() (kicked bool) {
	if len(s.queue)+1 >= limits.AuditBatchEvents {
		return false
	}
	t := time.NewTimer(limits.AuditStoreLinger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-s.kick:
		return true
	case <-s.closing:
	}
	return false
}

// fill adds to batch what the queue holds, up to a batch.
func (s *Store) fill(batch []row) []row {
	for len(batch) < limits.AuditBatchEvents {
		select {
		case r := <-s.queue:
			batch = append(batch, r)
		default:
			return batch
		}
	}
	return batch
}

// deliver makes sure of the table, delivers the spools when due, then
// inserts batch.
func (s *Store) deliver(ctx context.Context, batch []row, spoolDue bool) error {
	if !s.ready {
		if err := ensureSchema(ctx, s.pool); err != nil {
			return err
		}
		s.ready = true
	}
	if spoolDue {
		if err := s.deliverSpools(ctx); err != nil {
			return err
		}
	}
	if len(batch) == 0 {
		return nil
	}
	if err := insert(ctx, s.pool, &s.args, s.stream, s.host, batch); err != nil {
		s.ready = false // the table may be gone: made again next time
		return err
	}
	s.sent.Add(int64(len(batch)))
	s.pending.Add(-int64(len(batch)))
	return nil
}

// recovered notes that the store answered, and hands lost events not yet
// told to Options.Lost.
func (s *Store) recovered() {
	if !s.reachable.Swap(true) {
		s.log.Info("audit: the store answers", slog.String("stream", s.stream))
	}
	s.outage.Store(false)
	if n := s.lost.Load() - s.reported; n > 0 {
		s.reported += n
		if s.o.Lost != nil {
			s.o.Lost(n)
		}
	}
}

func (s *Store) failed(err error) {
	msg := err.Error()
	s.lastErr.Store(&msg)
	if s.reachable.Swap(false) || s.sent.Load() == 0 {
		s.log.Warn("audit: the store cannot be reached; events wait in the spool", slog.String("stream", s.stream), slog.String("error", msg))
	}
}

// Flush waits until every event written before it is in the store, or
// ctx ends.
func (s *Store) Flush(ctx context.Context) error {
	for s.pending.Load() > 0 {
		select {
		case s.kick <- struct{}{}:
		default:
		}
		select {
		case <-ctx.Done():
			return fault.Wrap(fault.Unavailable, ctx.Err(), "pgstore: %d events are still waiting for the store", s.pending.Load())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return nil
}

// Close stops the sender, delivers what it held and what is queued
// within ctx, spools what the store did not take, and releases the
// store; what fits nowhere is told to Options.Lost.
func (s *Store) Close(ctx context.Context) error {
	select {
	case <-s.closing:
		return nil
	default:
	}
	close(s.closing)
	<-s.done
	// The count of lost events first, so that the event Lost makes of it
	// (written back to this store too) is delivered or spooled with the
	// rest.
	if n := s.lost.Load() - s.reported; n > 0 && s.o.Lost != nil {
		s.reported += n
		s.o.Lost(n)
	}
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	rest := s.held
	for len(s.queue) > 0 {
		rest = append(rest, <-s.queue)
	}
	if len(rest) > 0 {
		// Unless the store was failing, try it (a short-lived process's
		// sender may not have reached it yet).
		if s.reachable.Load() || s.lastErr.Load() == nil {
			if (s.ready || ensureSchema(ctx, s.pool) == nil) && insert(ctx, s.pool, &s.args, s.stream, s.host, rest) == nil {
				s.sent.Add(int64(len(rest)))
				s.pending.Add(-int64(len(rest)))
				rest = nil
			}
		}
		for i, r := range rest {
			if serr := s.spool.append(r.record()); serr != nil {
				s.lose(int64(len(rest)-i), serr)
				break
			}
		}
	}
	if n := s.lost.Load() - s.reported; n > 0 {
		s.log.Error("audit: events were lost as the store closed: the store could not be reached and the spool is full",
			slog.String("stream", s.stream), slog.Int64("lost", n))
	}
	s.pool.Close()
	return errors.Join(s.spool.close())
}
