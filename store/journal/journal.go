package journal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"syscall"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
)

// Sentinels, matched with errors.Is; the *RecordError that carries them
// says where.
var (
	// ErrCorrupt: a complete record is malformed, out of sequence, not
	// chained to its predecessor, or fails its hash.
	ErrCorrupt = fault.NewMark("journal: corrupt record")
	// ErrIncompleteTail: the journal ends with an incomplete line, as a
	// crash mid-append leaves it. Repair removes it when asked.
	ErrIncompleteTail = fault.NewMark("journal: incomplete last record")
)

// RecordError locates the first bad record.
type RecordError struct {
	// Seq is the record number expected at that place.
	Seq uint64
	// Line is the 1-based line number; Offset the byte offset of the
	// line's start.
	Line   int
	Offset int64
	// Reason says what is wrong.
	Reason string
	Err    error
}

func (e *RecordError) Error() string { return e.Err.Error() + ": " + e.Reason }

// Unwrap returns the sentinel.
func (e *RecordError) Unwrap() error { return e.Err }

// Options configure a Journal. The zero value is the default.
type Options struct {
	// MaxEventBytes bounds one canonical event; zero means
	// limits.JournalMaxEventBytes, which it may lower but not raise.
	MaxEventBytes int
	// MaxJournalBytes bounds the journal file; zero means
	// limits.JournalMaxJournalBytes, which it may lower but not raise.
	MaxJournalBytes int64
	// LockWait bounds the wait for another appender's lock when the
	// context has no earlier deadline; zero means 10 seconds.
	LockWait time.Duration
	// Progress, if set, is told how many bytes Verify has checked of the
	// total.
	Progress func(done, total int64)
}

var namePattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_.-]{0,127}$`) })

// Journal is one named journal in a private directory. It is safe for
// concurrent use; several Journals (in one process or many) may append to
// the same journal.
type Journal struct {
	mu   sync.Mutex
	dir  *scope.Changes
	name string
	o    Options
	lock *os.File
	data *os.File // opened for appending on first Append

	// What this handle last saw at the end of the file, to chain the next
	// append without rereading when nobody else appended meanwhile.
	tail struct {
		valid bool
		size  int64
		seq   uint64
		head  string
	}
}

// Report describes a journal's verified prefix.
type Report struct {
	// Records and Bytes count the records that verified and the bytes they
	// span; Head is the last one's hash (Genesis when there are none).
	Records uint64 `json:"records"`
	Bytes   int64  `json:"bytes"`
	Head    string `json:"head"`
	// Size is the file's size; it exceeds Bytes when verification stopped
	// at a bad record or an incomplete tail.
	Size int64 `json:"size"`
}

// Open opens the journal name (matching ^[a-z0-9][a-z0-9_.-]{0,127}$) in
// dir, an absolute path to an existing private directory. The journal file
// itself is created by the first Append. opts may be nil.
func Open(dir, name string, opts *Options) (*Journal, error) {
	if !filepath.IsAbs(dir) {
		return nil, fault.New(fault.InvalidInput, "the journal directory must be an absolute path")
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	t, err := scope.Host(dir)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	c, err := t.OpenForChanges(fileNames(name)...)
	if err != nil {
		return nil, err
	}
	j, err := openIn(c, name, opts)
	if err != nil {
		c.Close()
		return nil, err
	}
	return j, nil
}

// checkName refuses a journal name that does not match namePattern.
func checkName(name string) error {
	if !namePattern().MatchString(name) {
		return fault.New(fault.InvalidInput, "journal name %q must match ^[a-z0-9][a-z0-9_.-]{0,127}$", name)
	}
	return nil
}

// fileNames are the files of the journal name: its records and its lock.
func fileNames(name string) []string { return []string{name + ".jsonl", name + ".lock"} }

// openIn opens the journal in the directory c, which it takes over.
func openIn(c *scope.Changes, name string, opts *Options) (*Journal, error) {
	j := &Journal{dir: c, name: name}
	if opts != nil {
		j.o = *opts
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	switch {
	case j.o.MaxEventBytes == 0:
		j.o.MaxEventBytes = limits.JournalMaxEventBytes
	case j.o.MaxEventBytes < 0 || j.o.MaxEventBytes > limits.JournalMaxEventBytes:
		return nil, fault.New(fault.InvalidInput, "MaxEventBytes %d is outside 1..%d", j.o.MaxEventBytes, limits.JournalMaxEventBytes)
	}
	switch {
	case j.o.MaxJournalBytes == 0:
		j.o.MaxJournalBytes = limits.JournalMaxJournalBytes
	case j.o.MaxJournalBytes < 0 || j.o.MaxJournalBytes > limits.JournalMaxJournalBytes:
		return nil, fault.New(fault.InvalidInput, "MaxJournalBytes %d is outside 1..%d", j.o.MaxJournalBytes, limits.JournalMaxJournalBytes)
	}
	if j.o.LockWait <= 0 {
		j.o.LockWait = 10 * time.Second
	}
	if err := checkPrivate(c); err != nil {
		return nil, err
	}
	lock, err := c.OpenFile(name+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "opening the journal's lock file failed")
	}
	if err := checkRegular(lock, "lock file"); err != nil {
		lock.Close()
		return nil, err
	}
	j.lock = lock
	return j, nil
}

// Close releases the journal's files.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.data != nil {
		j.data.Close()
		j.data = nil
	}
	j.lock.Close()
	return j.dir.Close()
}

func (j *Journal) fileName() string { return j.name + ".jsonl" }

func checkRegular(f *os.File, what string) error {
	st, err := f.Stat()
	if err != nil {
		return fault.As(err)
	}
	if !st.Mode().IsRegular() {
		return fault.New(fault.InvalidInput, "the journal's %s is not a regular file", what)
	}
	return nil
}

// checkSoleLink refuses a journal file that has another hard link: it is
// changed in place (appended to, truncated), so the change would also
// reach the other name, which may lie outside the journal's directory.
func checkSoleLink(f *os.File) error {
	st, err := f.Stat()
	if err != nil {
		return fault.As(err)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok && s.Nlink != 1 {
		return fault.New(fault.Denied, "the journal file has other hard links; it is never changed through them (an operator must copy it to a file of its own)")
	}
	return nil
}

// Append canonicalizes event, appends it as the next record and returns the
// record once it is durable. It refuses to append after an incomplete or
// corrupt last record (integrity) and beyond the journal bound (limit).
func (j *Journal) Append(ctx context.Context, event []byte) (Record, error) {
	canon, err := Canonicalize(event, j.o.MaxEventBytes)
	if err != nil {
		return Record{}, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.flock(ctx, true)
	if err != nil {
		return Record{}, err
	}
	defer unlock()
	if err := j.openData(); err != nil {
		return Record{}, err
	}
	st, err := j.data.Stat()
	if err != nil {
		return Record{}, fault.As(err)
	}
	size := st.Size()
	seq, head := j.tail.seq, j.tail.head
	if !j.tail.valid || j.tail.size != size {
		if seq, head, err = j.readLast(size); err != nil {
			return Record{}, err
		}
	}
	line, hash := EncodeRecord(seq+1, head, canon)
	if size+int64(len(line)) > j.o.MaxJournalBytes {
		return Record{}, fault.New(fault.Limit, "the journal is full: %d more bytes would pass its bound of %d bytes", len(line), j.o.MaxJournalBytes)
	}
	if err := j.write(line, size); err != nil {
		return Record{}, err
	}
	j.tail.valid, j.tail.size, j.tail.seq, j.tail.head = true, size+int64(len(line)), seq+1, hash
	return Record{Seq: seq + 1, Prev: head, Hash: hash, Event: canon}, nil
}

// openData opens (creating it durably if need be) the journal file for
// appending.
func (j *Journal) openData() error {
	if j.data != nil {
		return nil
	}
	flag := os.O_RDWR | os.O_APPEND | syscall.O_NOFOLLOW | syscall.O_NONBLOCK
	f, err := j.dir.OpenFile(j.fileName(), flag, 0)
	if errors.Is(err, fs.ErrNotExist) {
		if f, err = j.dir.OpenFile(j.fileName(), flag|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			err = j.dir.Sync()
		}
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		return fault.Wrap(fault.IO, err, "opening the journal file failed")
	}
	if err := checkRegular(f, "file"); err != nil {
		f.Close()
		return err
	}
	if err := checkSoleLink(f); err != nil {
		f.Close()
		return err
	}
	j.data = f
	return nil
}

// readLast returns the number and hash of the last record of a journal of
// size bytes, checking only that record.
func (j *Journal) readLast(size int64) (uint64, string, error) {
	if size == 0 {
		return 0, Genesis, nil
	}
	n := min(size, int64(maxLine(j.o.MaxEventBytes))+1)
	buf := make([]byte, n)
	if _, err := j.data.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return 0, "", fault.Wrap(fault.IO, err, "reading the journal failed")
	}
	if buf[n-1] != '\n' {
		start := int64(bytes.LastIndexByte(buf, '\n') + 1)
		return 0, "", j.bad(ErrIncompleteTail, 0, 0, size-n+start, "the journal ends with an incomplete record (a crash mid-append?); verify it, then repair it to remove the incomplete record")
	}
	body := buf[:n-1]
	start := bytes.LastIndexByte(body, '\n') + 1
	if start == 0 && n < size {
		return 0, "", j.bad(ErrCorrupt, 0, 0, size-n, "the last record is longer than any valid record")
	}
	rec, why := parseRecord(body[start:], j.o.MaxEventBytes)
	if why != "" {
		return 0, "", j.bad(ErrCorrupt, 0, 0, size-n+int64(start), "the last record is corrupt: "+why+"; run verify")
	}
	return rec.Seq, rec.Hash, nil
}

func (j *Journal) bad(sentinel error, seq uint64, line int, off int64, reason string) *fault.Error {
	return fault.Wrap(fault.Integrity, &RecordError{Seq: seq, Line: line, Offset: off, Reason: reason, Err: sentinel}, "journal %s: %s", j.name, reason)
}

// write appends line with one write and makes it durable; on failure it
// truncates the file back to size so no torn record of ours remains.
func (j *Journal) write(line []byte, size int64) error {
	n, err := j.data.Write(line)
	if err == nil {
		err = fdatasync(j.data)
	}
	if err != nil {
		if n > 0 {
			if terr := j.data.Truncate(size); terr == nil {
				fdatasync(j.data)
			}
		}
		j.tail.valid = false
		return fault.Wrap(fault.IO, err, "appending to the journal failed; the record was not added")
	}
	return nil
}

// scan reads the journal from the start, verifying every record, and calls
// fn with each until fn returns false. It returns the report of the
// verified prefix and, if verification stopped at a bad record or an
// incomplete tail, an integrity failure carrying a *RecordError.
func (j *Journal) scan(ctx context.Context, fn func(Record) bool) (*Report, error) {
	f, err := j.dir.OpenFile(j.fileName(), os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fault.Wrap(fault.NotFound, err, "journal %s does not exist (nothing was appended yet)", j.name)
		}
		return nil, fault.Wrap(fault.IO, err, "opening the journal failed")
	}
	defer f.Close()
	if err := checkRegular(f, "file"); err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fault.As(err)
	}
	rep := &Report{Head: Genesis, Size: st.Size()}
	if rep.Size > j.o.MaxJournalBytes {
		return rep, fault.New(fault.Limit, "journal %s has %d bytes, more than the bound of %d: it was not written by this package", j.name, rep.Size, j.o.MaxJournalBytes)
	}
	br := bufio.NewReaderSize(io.LimitReader(f, rep.Size), maxLine(j.o.MaxEventBytes)+1)
	for line := 1; ; line++ {
		if line%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return rep, fault.As(err)
			}
			if j.o.Progress != nil {
				j.o.Progress(rep.Bytes, rep.Size)
			}
		}
		b, err := br.ReadSlice('\n')
		switch {
		case err == io.EOF && len(b) == 0:
			if j.o.Progress != nil {
				j.o.Progress(rep.Bytes, rep.Size)
			}
			return rep, nil
		case err == io.EOF:
			return rep, j.bad(ErrIncompleteTail, rep.Records+1, line, rep.Bytes,
				"line "+itoa(line)+" (byte "+itoa64(rep.Bytes)+") is an incomplete record: the journal ends mid-record, as a crash mid-append leaves it; repair removes it")
		case errors.Is(err, bufio.ErrBufferFull):
			return rep, j.bad(ErrCorrupt, rep.Records+1, line, rep.Bytes,
				"line "+itoa(line)+" (byte "+itoa64(rep.Bytes)+", record "+itoa64(int64(rep.Records+1))+") is longer than any valid record")
		case err != nil:
			return rep, fault.Wrap(fault.IO, err, "reading the journal failed")
		}
		rec, why := parseRecord(b[:len(b)-1], j.o.MaxEventBytes)
		switch {
		case why != "":
		case rec.Seq != rep.Records+1:
			why = "seq is " + itoa64(int64(rec.Seq)) + ", expected " + itoa64(int64(rep.Records+1)) + " (a record was deleted, inserted or moved)"
		case rec.Prev != rep.Head:
			why = "prev does not match the hash of the record before it (a record was deleted, inserted, moved or edited)"
		}
		if why != "" {
			return rep, j.bad(ErrCorrupt, rep.Records+1, line, rep.Bytes,
				"record "+itoa64(int64(rep.Records+1))+" (line "+itoa(line)+", byte "+itoa64(rep.Bytes)+"): "+why)
		}
		rep.Records++
		rep.Bytes += int64(len(b))
		rep.Head = rec.Hash
		if fn != nil && !fn(rec) {
			return rep, nil
		}
	}
}

// Verify checks every record of the journal. It returns the report of the
// verified prefix and nil, or that report and an integrity failure carrying
// a *RecordError for the first bad record (ErrCorrupt) or an incomplete
// last record (ErrIncompleteTail). A missing journal is not_found.
func (j *Journal) Verify(ctx context.Context) (*Report, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.flock(ctx, false)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return j.scan(ctx, nil)
}

// Read returns up to max verified records starting at record from (1 is
// the first). Records are verified from the start of the journal up to the
// last one returned.
func (j *Journal) Read(ctx context.Context, from uint64, max int) ([]Record, *Report, error) {
	return j.ReadUpTo(ctx, from, max, 0)
}

// ReadUpTo is Read that also stops after the record whose event takes the
// events returned past maxBytes (0: no byte bound), for a caller that can
// show no more than that.
func (j *Journal) ReadUpTo(ctx context.Context, from uint64, max int, maxBytes int64) ([]Record, *Report, error) {
	if from == 0 {
		from = 1
	}
	if max <= 0 {
		return nil, nil, fault.New(fault.InvalidInput, "read at least one record")
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.flock(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	defer unlock()
	var out []Record
	var events int64
	rep, err := j.scan(ctx, func(r Record) bool {
		if r.Seq >= from {
			// r.Event points into the scan's buffer, which the next line
			// overwrites.
			r.Event = bytes.Clone(r.Event)
			out = append(out, r)
			events += int64(len(r.Event))
		}
		return len(out) < max && (maxBytes == 0 || events <= maxBytes)
	})
	return out, rep, err
}

// Repaired is the result of Repair.
type Repaired struct {
	// Removed is how many bytes of incomplete record were truncated.
	Removed int64 `json:"removed"`
	Report
}

// Repair removes an incomplete last record (ErrIncompleteTail), and only
// that: a journal whose complete records fail verification is refused with
// integrity and left unchanged, and a sound journal is left as it is. Call
// it only when an operator asked for it.
func (j *Journal) Repair(ctx context.Context) (*Repaired, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	unlock, err := j.flock(ctx, true)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rep, err := j.scan(ctx, nil)
	if err == nil {
		return &Repaired{Report: *rep}, nil
	}
	if !errors.Is(err, ErrIncompleteTail) {
		return nil, err
	}
	f, oerr := j.dir.OpenFile(j.fileName(), os.O_WRONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if oerr != nil {
		return nil, fault.Wrap(fault.IO, oerr, "opening the journal failed")
	}
	defer f.Close()
	if err := checkSoleLink(f); err != nil {
		return nil, err
	}
	if err := f.Truncate(rep.Bytes); err != nil {
		return nil, fault.Wrap(fault.IO, err, "truncating the journal failed")
	}
	if err := fdatasync(f); err != nil {
		return nil, fault.Wrap(fault.IO, err, "syncing the journal failed")
	}
	j.tail.valid = false
	removed := rep.Size - rep.Bytes
	rep.Size = rep.Bytes
	return &Repaired{Removed: removed, Report: *rep}, nil
}
