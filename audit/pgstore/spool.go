package pgstore

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	jsonv2 "github.com/go-json-experiment/json"
	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// A spool is a directory of files, one a stream: STREAM.spool, its first
// line a header naming the stream and its host, then the stream's records
// in store/journal's framing, as the store would hold them. The process
// writing a spool holds an exclusive flock(2) on it; a spool nobody holds
// was left by a process that ended, and whoever reaches the store next
// delivers it. To deliver its own spool without stopping writers, a
// process renames it STREAM.spool.N (keeping its lock) and starts a new
// one.

const spoolExt = ".spool"

// spoolHeader is a spool's first line.
type spoolHeader struct {
	Stream string `json:"stream"`
	Host   string `json:"host"`
}

// taken is a spool set aside: its file (locked) and its name now.
type taken struct {
	f    *os.File
	path string
}

type spool struct {
	dir, stream, host string
	max               int64

	mu     sync.Mutex
	f      *os.File // the spool being written, flocked; nil until needed
	bytes  int64    // its size
	events int64
	// taken are our spools set aside for delivery, still locked.
	taken []taken
	next  int

	delivered atomic.Int64 // our events delivered from spools
}

func openSpool(dir, stream, host string, max int64) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), err, "the audit spool directory %s cannot be made", dir)
	}
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return nil, fault.New(fault.InvalidInput, "the audit spool %s is not a directory", dir)
	}
	return &spool{dir: dir, stream: stream, host: host, max: max}, nil
}

// size is the events and bytes spooled and not delivered.
func (s *spool) size() (int64, int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.events, s.bytes
}

// append adds one record, or fails when it would pass the bound.
func (s *spool) append(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bytes+int64(len(line)) > s.max {
		return fault.New(fault.Limit, "the audit spool is full (%s)", limits.Bytes(s.max))
	}
	if s.f == nil {
		if err := s.create(); err != nil {
			return err
		}
	}
	if n, err := s.f.Write(line); err != nil {
		if n > 0 {
			s.f.Truncate(s.fileSize())
		}
		return fault.Wrap(fault.IO, err, "appending to the audit spool failed")
	}
	s.bytes += int64(len(line))
	s.events++
	return nil
}

// fileSize is the size of the spool file: its header and records.
func (s *spool) fileSize() int64 {
	st, err := s.f.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// create makes and locks the spool file, with its header.
func (s *spool) create() error {
	path := filepath.Join(s.dir, s.stream+spoolExt)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fault.Wrap(fault.IO, err, "the audit spool %s cannot be made", path)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		return fault.Wrap(fault.IO, err, "the audit spool %s cannot be locked", path)
	}
	head, _ := jsonv2.Marshal(spoolHeader{Stream: s.stream, Host: s.host})
	if _, err := f.Write(append(head, '\n')); err != nil {
		f.Close()
		os.Remove(path)
		return fault.Wrap(fault.IO, err, "the audit spool %s cannot be written", path)
	}
	s.f = f
	return nil
}

// take sets the spool being written aside for delivery (a new one starts
// with the next append) and returns every spool of ours set aside.
func (s *spool) take() []taken {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.f != nil {
		s.next++
		old := filepath.Join(s.dir, s.stream+spoolExt)
		aside := old + "." + strconv.Itoa(s.next)
		if err := os.Rename(old, aside); err == nil {
			s.taken = append(s.taken, taken{s.f, aside})
			s.f = nil
		}
	}
	return slices.Clone(s.taken)
}

// done removes a delivered spool of ours.
func (s *spool) done(t taken, events, size int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	os.Remove(t.path)
	t.f.Close()
	s.taken = slices.DeleteFunc(s.taken, func(x taken) bool { return x.f == t.f })
	s.events -= events
	s.bytes -= size
	s.delivered.Add(events)
}

// close releases the spools: one holding events stays for a later
// process to deliver; an empty one is removed.
func (s *spool) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	files := append(s.taken, taken{s.f, filepath.Join(s.dir, s.stream+spoolExt)})
	for _, t := range files {
		if t.f == nil {
			continue
		}
		if s.events == 0 {
			os.Remove(t.path)
		}
		errs = append(errs, t.f.Close())
	}
	s.taken, s.f = nil, nil
	return errors.Join(errs...)
}

// deliverSpools delivers this process's spools, then any left by a
// process that ended.
func (s *Store) deliverSpools(ctx context.Context) error {
	for _, t := range s.spool.take() {
		events, size, err := s.deliverFile(ctx, t.f)
		if err != nil {
			return err
		}
		s.spool.done(t, events, size)
		s.pending.Add(-events)
	}
	return s.deliverOrphans(ctx)
}

// deliverOrphans delivers the spools no live process holds.
func (s *Store) deliverOrphans(ctx context.Context) error {
	entries, err := os.ReadDir(s.spool.dir)
	if err != nil {
		return nil // the spool directory is gone: nothing to deliver
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !strings.Contains(name, spoolExt) || strings.HasPrefix(name, s.stream+".") {
			continue
		}
		f, err := os.OpenFile(filepath.Join(s.spool.dir, name), os.O_RDWR|syscall.O_NOFOLLOW, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
			f.Close() // a live process holds it
			continue
		}
		_, _, err = s.deliverFile(ctx, f)
		if err == nil {
			os.Remove(f.Name())
		}
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// deliverFile inserts a spool's records, batch by batch, and returns how
// many it held. A last line cut short (a process killed mid-append) is
// counted lost.
func (s *Store) deliverFile(ctx context.Context, f *os.File) (events, size int64, err error) {
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return 0, 0, fault.Wrap(fault.IO, err, "reading the audit spool failed")
	}
	br := bufio.NewReaderSize(f, journal.MaxLine(limits.AuditMaxEventBytes))
	head, err := br.ReadSlice('\n')
	var h spoolHeader
	if err != nil || jsonv2.Unmarshal(head, &h, jsonv2.RejectUnknownMembers(false)) != nil || h.Stream == "" {
		s.log.Error("audit: a spool file without a header is left as it is", "file", f.Name())
		return 0, 0, nil
	}
	var batch []row
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := insert(ctx, s.pool, &s.args, h.Stream, h.Host, batch); err != nil {
			return err
		}
		events += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	for {
		line, err := br.ReadSlice('\n')
		if err == io.EOF && len(line) == 0 {
			break
		}
		if err != nil || !bytes.HasSuffix(line, []byte("\n")) {
			s.lose(1, errors.New("a spooled record was cut short"))
			break
		}
		size += int64(len(line))
		r, ok := spooledRow(line[:len(line)-1])
		if !ok {
			s.lose(1, errors.New("a spooled record does not decode"))
			continue
		}
		if batch = append(batch, r); len(batch) == limits.AuditBatchEvents {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := flush(); err != nil {
		return 0, 0, err
	}
	return events, size, nil
}

// spooledRow is the row of a spooled record.
func spooledRow(line []byte) (row, bool) {
	rec, err := journal.DecodeRecord(line, limits.AuditMaxEventBytes)
	if err != nil {
		return row{}, false
	}
	e, err := audit.Decode(rec.Event)
	if err != nil {
		return row{}, false
	}
	return row{seq: int64(rec.Seq), prev: rec.Prev, hash: rec.Hash, at: e.Time, msg: e.Msg, actor: e.Actor, tool: e.Tool,
		outcome: e.Outcome, policy: e.Policy, durationUS: e.DurationUS, inBytes: e.InBytes, outBytes: e.OutBytes,
		left: e.CallsLeft, event: string(rec.Event)}, true
}
