package trail

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// Reader answers a reader's questions about trail files (an
// audit.Source): the files given, oldest first, read as one chain, the
// last one followed as it grows and across its rotation.
//
// Events reads the files backward from the end (or a cursor), so the
// newest window costs the bytes of its own lines, whatever the size of
// the trail; each answer reads at most limits.TrailReadBytes, and a
// window cut short by that bound still gives the cursor to go on from.
// Stats and Chain come from an index a goroutine builds once, reading
// the files forward and checking the chain: while it is being built they
// answer for what it has read so far (Chain's Total says how much). The
// index keeps the newest limits.TrailIndexCalls calls.
//
// Cursors are "FILE:OFFSET": the index of a file in the order given (a
// file the last one was rotated into comes after it) and the byte offset
// of a line's start. A line that is not a record of the trail (changed,
// cut) is left out of the windows; Chain says where the chain broke.
type Reader struct {
	mu      sync.Mutex
	files   []*readFile
	changed chan struct{}
	ix      index

	stop chan struct{}
	done chan struct{}
}

// readFile is one trail file the reader holds open.
type readFile struct {
	f    *os.File
	path string
	info os.FileInfo
}

// index is what the indexer found: where it is, the chain, and the calls
// Stats counts.
type index struct {
	file  int
	off   int64
	total uint64
	// chain and broken are the indexer's own (its goroutine alone uses
	// them); records and head are what Chain reports of them.
	chain            *Chain
	broken           string
	records          uint64
	head, brokenSeen string
	calls            []call // a ring of the newest calls
	next             int    // where the next call goes once the ring is full
	names            []string
	ids              map[string]uint32
	actors           map[uint32]bool
	tools            map[uint32]bool
	progress         bool // read anything since Changed was last told
	caughtUp         bool // read to the end of the files once
}

// call is one call event as the index keeps it: 32 bytes, names as ids.
type call struct {
	at, durationUS               int64
	actor, tool, outcome, policy uint32
}

// OpenReader opens the trail files paths (a rotated file before the one
// that continues it) for reading. The files must exist and be regular.
func OpenReader(ctx context.Context, paths []string, _ *ReaderOptions) (*Reader, error) {
	if len(paths) == 0 {
		return nil, fault.New(fault.InvalidInput, "audit trail: no file given")
	}
	r := &Reader{changed: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	r.ix.ids = map[string]uint32{}
	r.ix.actors, r.ix.tools = map[uint32]bool{}, map[uint32]bool{}
	for _, p := range paths {
		rf, err := openReadFile(p)
		if err != nil {
			r.closeFiles()
			return nil, err
		}
		r.files = append(r.files, rf)
	}
	go r.indexLoop()
	return r, ctx.Err()
}

// ReaderOptions configure a Reader; nil means the defaults (there are
// none to change yet).
type ReaderOptions struct{}

func openReadFile(path string) (*readFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), err, "the audit trail %s cannot be opened", path)
	}
	if err := regular(f, path); err != nil {
		f.Close()
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", path)
	}
	return &readFile{f: f, path: path, info: info}, nil
}

// Close stops the indexer and closes the files.
func (r *Reader) Close() error {
	close(r.stop)
	<-r.done
	r.closeFiles()
	return nil
}

func (r *Reader) closeFiles() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rf := range r.files {
		rf.f.Close()
	}
	r.files = nil
}

func (r *Reader) snapshot() []*readFile {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*readFile(nil), r.files...)
}

// Changed returns a channel closed when the indexer read new records.
func (r *Reader) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func parseCursor(cursor string, files []*readFile) (int, int64, error) {
	fs, offs, ok := strings.Cut(cursor, ":")
	fi, err1 := strconv.Atoi(fs)
	off, err2 := strconv.ParseInt(offs, 10, 64)
	if !ok || err1 != nil || err2 != nil || fi < 0 || fi >= len(files) || off < 0 {
		return 0, 0, fault.New(fault.InvalidInput, "cursor %q is not one this trail gave", cursor)
	}
	return fi, off, nil
}

func cursorOf(fi int, off int64) string { return strconv.Itoa(fi) + ":" + strconv.FormatInt(off, 10) }

// Position is the cursor after the last whole line of the last file.
func (r *Reader) Position(ctx context.Context) (string, error) {
	files := r.snapshot()
	last := len(files) - 1
	end, err := completeEnd(files[last])
	if err != nil {
		return "", err
	}
	return cursorOf(last, end), ctx.Err()
}

// completeEnd is the offset after the last newline of rf: what a writer
// has finished appending.
func completeEnd(rf *readFile) (int64, error) {
	st, err := rf.f.Stat()
	if err != nil {
		return 0, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", rf.path)
	}
	size := st.Size()
	buf := make([]byte, min(size, int64(journal.MaxLine(limits.AuditMaxEventBytes))))
	for end := size; end > 0; {
		n := min(int64(len(buf)), end)
		if _, err := rf.f.ReadAt(buf[:n], end-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", rf.path)
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return end - n + int64(i) + 1, nil
		}
		end -= n
	}
	return 0, nil
}

// Events is a window of at most limit events f selects, newest first,
// older than cursor, read backward from it.
func (r *Reader) Events(ctx context.Context, f audit.Filter, cursor string, limit int) (*audit.Page, error) {
	files := r.snapshot()
	fi, off := len(files)-1, int64(-1)
	if cursor != "" {
		var err error
		if fi, off, err = parseCursor(cursor, files); err != nil {
			return nil, err
		}
	}
	p := &audit.Page{}
	need := needles(f)
	budget := int64(limits.TrailReadBytes)
	var lastOff int64
	lastFile := fi
	for ; fi >= 0; fi, off = fi-1, -1 {
		if off < 0 {
			end, err := completeEnd(files[fi])
			if err != nil {
				return nil, err
			}
			off = end
		}
		full := false
		stopped, read, err := backward(ctx, files[fi], off, budget, func(at int64, line []byte) bool {
			if !holdsAll(line, need) {
				return true
			}
			e := decodeLine(line)
			if e == nil || !f.Matches(e) {
				return true
			}
			if len(p.Events) == limit {
				full = true
				return false
			}
			p.Events = append(p.Events, e)
			lastFile, lastOff = fi, at
			return true
		})
		if err != nil {
			return nil, err
		}
		budget -= read
		switch {
		case full:
			p.Next = cursorOf(lastFile, lastOff)
			return p, nil
		case stopped >= 0: // the read bound: go on from where it stopped
			p.Next = cursorOf(fi, stopped)
			return p, nil
		}
	}
	return p, nil
}

// needles are the members, as the canonical encoding writes them, that
// every record f selects holds: `"actor":"bob"`. decodeLine accepts only
// records whose events are canonical, where such a member appears byte
// for byte, so a line lacking one is passed over undecoded (decoding is
// what a filtered window costs: about 15 µs a line, a substring search
// well under one). A value canonical JSON cannot quote needs no needle.
func needles(f audit.Filter) [][]byte {
	var out [][]byte
	add := func(name, value string) {
		if value == "" {
			return
		}
		if b, err := jsontext.AppendQuote([]byte(`"`+name+`":`), value); err == nil {
			out = append(out, b)
		}
	}
	add("actor", f.Actor)
	add("tool", f.Tool)
	if f.Outcome != audit.OutcomeError {
		add("outcome", f.Outcome)
	}
	return out
}

// holdsAll reports whether line holds every needle.
func holdsAll(line []byte, needles [][]byte) bool {
	for _, n := range needles {
		if !bytes.Contains(line, n) {
			return false
		}
	}
	return true
}

// decodeLine is the event of a record's line, or nil when the line is not
// one.
func decodeLine(line []byte) *audit.Event {
	rec, err := journal.DecodeRecord(line, limits.AuditMaxEventBytes)
	if err != nil {
		return nil
	}
	e, err := audit.Decode(rec.Event)
	if err != nil {
		return nil
	}
	return e
}

// backward calls fn with each whole line of rf before end (its offset and
// its bytes without the newline), the last first, until fn returns false
// or the file's start. It reads at most budget bytes: past them it
// returns the offset it stopped at (-1 when it did not stop early) and
// the bytes it read.
func backward(ctx context.Context, rf *readFile, end, budget int64, fn func(int64, []byte) bool) (int64, int64, error) {
	// Reads start small (a window of a few rows needs a few lines) and
	// double to the largest.
	const maxChunk = 256 * limits.KiB
	chunk := int64(8 * limits.KiB)
	maxLine := journal.MaxLine(limits.AuditMaxEventBytes)
	var data []byte // the bytes [lo, lo+len(data)), ending at a line's end
	lo, read := end, int64(0)
	for lines := 0; ; lines++ {
		if lines%1024 == 0 && ctx.Err() != nil {
			return 0, read, fault.As(ctx.Err())
		}
		j := len(data)
		k := -1
		if j > 0 {
			k = bytes.LastIndexByte(data[:j-1], '\n')
		}
		if k < 0 && lo > 0 {
			if read >= budget {
				return lo + int64(j), read, nil
			}
			if j > 2*maxLine {
				return 0, read, fault.New(fault.Integrity, "the audit trail %s holds a line longer than any record before offset %d", rf.path, lo+int64(j))
			}
			n := min(chunk, lo)
			chunk = min(2*chunk, maxChunk)
			buf := make([]byte, n, n+int64(j))
			if _, err := rf.f.ReadAt(buf, lo-n); err != nil && !errors.Is(err, io.EOF) {
				return 0, read, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", rf.path)
			}
			data, lo, read = append(buf, data...), lo-n, read+n
			continue
		}
		if j == 0 {
			return -1, read, nil
		}
		if !fn(lo+int64(k+1), data[k+1:j-1]) {
			return -1, read, nil
		}
		data = data[:k+1]
	}
}

// forward calls fn with each whole line of rf from off (its offset and
// its bytes without the newline) until fn returns false, the last whole
// line, or budget bytes read; it returns the offset after the last line
// given to fn. A line longer than any record is given as it is, cut.
func forward(ctx context.Context, rf *readFile, off, budget int64, fn func(int64, []byte) bool) (int64, error) {
	br := bufio.NewReaderSize(io.NewSectionReader(rf.f, off, 1<<62), journal.MaxLine(limits.AuditMaxEventBytes))
	start := off
	for lines := 0; off-start < budget; lines++ {
		if lines%1024 == 0 && ctx.Err() != nil {
			return off, fault.As(ctx.Err())
		}
		b, err := br.ReadSlice('\n')
		n := int64(len(b))
		for errors.Is(err, bufio.ErrBufferFull) {
			var more []byte
			more, err = br.ReadSlice('\n')
			n += int64(len(more))
		}
		switch {
		case errors.Is(err, io.EOF):
			return off, nil // a line not finished yet is not read
		case err != nil:
			return off, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", rf.path)
		}
		if !fn(off, b[:len(b)-1]) {
			return off + n, nil
		}
		off += n
	}
	return off, nil
}

// After is at most limit events f selects after cursor, oldest first, and
// the cursor after the last line looked at.
func (r *Reader) After(ctx context.Context, f audit.Filter, cursor string, limit int) ([]*audit.Event, string, error) {
	files := r.snapshot()
	fi, off := 0, int64(0)
	if cursor != "" {
		var err error
		if fi, off, err = parseCursor(cursor, files); err != nil {
			return nil, cursor, err
		}
	}
	var out []*audit.Event
	budget := int64(limits.TrailReadBytes)
	for {
		start := off
		end, err := forward(ctx, files[fi], off, budget, func(_ int64, line []byte) bool {
			if e := decodeLine(line); e != nil && f.Matches(e) {
				out = append(out, e)
			}
			return len(out) < limit
		})
		if err != nil {
			return out, cursorOf(fi, off), err
		}
		off, budget = end, budget-(end-start)
		if len(out) >= limit || budget <= 0 || fi == len(files)-1 {
			return out, cursorOf(fi, off), nil
		}
		// A file followed by another is whole: go on in the next one.
		if whole, err := completeEnd(files[fi]); err != nil || off < whole {
			return out, cursorOf(fi, off), err
		}
		fi, off = fi+1, 0
	}
}

// indexLoop builds the index and follows the trail as it grows.
func (r *Reader) indexLoop() {
	defer close(r.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-r.stop
		cancel()
	}()
	tick := time.NewTicker(limits.AuditPollInterval)
	defer tick.Stop()
	for {
		r.indexOnce(ctx)
		select {
		case <-r.stop:
			return
		case <-tick.C:
		}
	}
}

// indexOnce reads what was appended since it last did, and a rotation of
// the last file into a new one.
func (r *Reader) indexOnce(ctx context.Context) {
	for ctx.Err() == nil {
		files := r.snapshot()
		r.mu.Lock()
		fi, off := r.ix.file, r.ix.off
		r.mu.Unlock()
		rf := files[fi]
		n := r.ix.total // only this goroutine changes it
		end, err := forward(ctx, rf, off, limits.TrailReadBytes, func(_ int64, line []byte) bool {
			n++
			e := r.ix.check(rf.path, n, line)
			r.mu.Lock()
			r.ix.add(e)
			r.ix.records, r.ix.head, r.ix.brokenSeen = r.ix.chain.Records, r.ix.chain.Head, r.ix.broken
			r.mu.Unlock()
			return true
		})
		r.mu.Lock()
		r.ix.off = end
		r.mu.Unlock()
		switch {
		case err != nil:
			return
		case end-off >= limits.TrailReadBytes:
			continue // more to read
		case fi < len(files)-1:
			r.mu.Lock()
			r.ix.file, r.ix.off = fi+1, 0
			r.mu.Unlock()
			continue
		}
		if !r.rotated(rf) {
			r.mu.Lock()
			if !r.ix.caughtUp {
				r.ix.caughtUp, r.ix.progress = true, true
			}
			r.mu.Unlock()
			break
		}
		// Read the old file to its end once more before the new one: the
		// writer's last lines there may have come after the read above.
	}
	r.mu.Lock()
	if r.ix.progress {
		r.ix.progress = false
		close(r.changed)
		r.changed = make(chan struct{})
	}
	r.mu.Unlock()
}

// rotated reports whether last's path now names another file (a writer
// rotated it), which it then opens as the next file.
func (r *Reader) rotated(last *readFile) bool {
	st, err := os.Stat(last.path)
	if err != nil || os.SameFile(st, last.info) {
		return false
	}
	rf, err := openReadFile(last.path)
	if err != nil {
		return false
	}
	r.mu.Lock()
	r.files = append(r.files, rf)
	r.mu.Unlock()
	return true
}

// check continues the chain with one line (the indexer's goroutine owns
// the chain) and returns the line's event, nil when it is not a record.
func (ix *index) check(path string, n uint64, line []byte) *audit.Event {
	if ix.chain == nil {
		// A trail given from a rotated file on is checked from its first
		// record.
		ix.chain = NewChain()
		if rec, err := journal.DecodeRecord(line, limits.AuditMaxEventBytes); err == nil {
			ix.chain = ChainAfter(rec.Seq-1, rec.Prev)
		}
	}
	if ix.broken == "" {
		rec, kind, why := ix.chain.Add(line)
		if kind == "" {
			e, err := audit.Decode(rec.Event)
			if err != nil {
				return nil
			}
			return e
		}
		ix.broken = path + ": record " + strconv.FormatUint(ix.chain.Seq+1, 10) + " (line " + strconv.FormatUint(n, 10) + " read): " + kind + ": " + why
	}
	return decodeLine(line)
}

// add counts one line read and indexes its event, if any.
func (ix *index) add(e *audit.Event) {
	ix.total++
	ix.progress = true
	if e == nil {
		return
	}
	if e.Actor != "" {
		ix.actors[ix.id(e.Actor)] = true
	}
	if e.Tool != "" {
		ix.tools[ix.id(e.Tool)] = true
	}
	if e.Msg != audit.MsgCall {
		return
	}
	c := call{at: e.Time.UnixNano(), durationUS: e.DurationUS, actor: ix.id(e.Actor), tool: ix.id(e.Tool), outcome: ix.id(e.Outcome), policy: ix.id(e.Policy)}
	if len(ix.calls) < limits.TrailIndexCalls {
		ix.calls = append(ix.calls, c)
		return
	}
	ix.calls[ix.next] = c
	ix.next = (ix.next + 1) % len(ix.calls)
}

// id is name's number in the index's names, bounded: past
// limits.TrailIndexNames distinct names, the rest share one.
func (ix *index) id(name string) uint32 {
	if id, ok := ix.ids[name]; ok {
		return id
	}
	if len(ix.names) >= limits.TrailIndexNames {
		name = "(other)"
		if id, ok := ix.ids[name]; ok {
			return id
		}
	}
	id := uint32(len(ix.names))
	ix.names = append(ix.names, name)
	ix.ids[name] = id
	return id
}

// Stats counts the calls f selects among those indexed so far. It counts
// a copy, so that windows and the indexer do not wait for it.
func (r *Reader) Stats(ctx context.Context, f audit.Filter) (*audit.Stats, error) {
	r.mu.Lock()
	calls, names := slices.Clone(r.ix.calls), r.ix.names // names are only appended to
	r.mu.Unlock()
	var a audit.Accumulator
	e := audit.Event{Msg: audit.MsgCall}
	for i, c := range calls {
		if i%4096 == 0 && ctx.Err() != nil {
			return nil, fault.As(ctx.Err())
		}
		e.Time = time.Unix(0, c.at)
		e.Actor, e.Tool, e.Outcome, e.Policy = names[c.actor], names[c.tool], names[c.outcome], names[c.policy]
		e.DurationUS = c.durationUS
		if f.Matches(&e) {
			a.Add(&e)
		}
	}
	return a.Stats(limits.AuditBuckets), nil
}

// Chain is what the indexer found so far.
func (r *Reader) Chain(context.Context) (*audit.ChainState, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := &audit.ChainState{Total: r.ix.total, Streams: 1, Records: r.ix.records, Head: r.ix.head, Broken: r.ix.brokenSeen}
	if !r.ix.caughtUp {
		st.Partial, st.ReadBytes = true, r.ix.off
		for i, rf := range r.files {
			st.SizeBytes += rf.info.Size()
			if i < r.ix.file {
				st.ReadBytes += rf.info.Size()
			}
		}
	}
	return st, nil
}

// Names are the actors and tools indexed so far.
func (r *Reader) Names(context.Context) ([]string, []string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	list := func(m map[uint32]bool) []string {
		out := make([]string, 0, len(m))
		for id := range m {
			out = append(out, r.ix.names[id])
		}
		slices.Sort(out)
		return out[:min(len(out), limits.AuditMaxNames)]
	}
	return list(r.ix.actors), list(r.ix.tools), nil
}
