package trail

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/noreplace"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/store/journal"
)

// Options configure a Writer. The zero value is the default.
type Options struct {
	// MaxBytes is the size past which the file is rotated; zero means
	// limits.AuditDefaultMaxFileBytes. At least limits.AuditMinFileBytes.
	MaxBytes int64
	// OnError is told of every append that failed (the event is then not
	// in the trail: Stats counts them). Nil: only counted.
	OnError func(error)
	// Appended, if set, is called after each append (a reader in this
	// process looks at the file at once rather than at its next poll).
	Appended func()
}

// Writer appends events to a trail file: an audit.Sink.
type Writer struct {
	path string
	o    Options

	mu   sync.Mutex
	dir  *os.File // the file's directory, for renames
	lock *os.File
	f    *os.File // the trail, O_APPEND; nil until the first append
	ino  uint64   // f's inode
	// What this writer knows of the end of f, to chain the next record
	// without rereading when nobody else appended meanwhile.
	known bool
	end   int64
	seq   uint64
	head  string
	line  []byte // the record being appended, reused

	failed atomic.Int64
}

// WriterStats are a writer's counts.
type WriterStats struct {
	// Failed counts events that could not be appended.
	Failed int64 `json:"failed"`
}

// Open returns a writer appending to the trail at path (created 0600 on
// the first append; its directory must exist). opts may be nil.
func Open(path string, opts *Options) (*Writer, error) {
	w := &Writer{path: path}
	if opts != nil {
		w.o = *opts
	}
	switch {
	case w.o.MaxBytes == 0:
		w.o.MaxBytes = limits.AuditDefaultMaxFileBytes
	case w.o.MaxBytes < limits.AuditMinFileBytes:
		return nil, fault.New(fault.InvalidInput, "the audit trail's rotation size %d is below %s", w.o.MaxBytes, limits.Bytes(limits.AuditMinFileBytes))
	}
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "the audit trail %s is not a regular file", path)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), err, "the audit trail's directory %s cannot be opened", filepath.Dir(path))
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		dir.Close()
		return nil, fault.Wrap(fault.CodeOf(err), err, "the audit trail's lock file %s.lock cannot be opened", path)
	}
	if err := regular(lock, path+".lock"); err != nil {
		dir.Close()
		lock.Close()
		return nil, err
	}
	w.dir, w.lock = dir, lock
	return w, nil
}

// Path is the trail's file.
func (w *Writer) Path() string { return w.path }

// Stats are the writer's counts.
func (w *Writer) Stats() WriterStats { return WriterStats{Failed: w.failed.Load()} }

// Write appends e as the next record. A failure is counted and told to
// Options.OnError.
func (w *Writer) Write(e *audit.Event) {
	if err := w.Append(e.JSON); err != nil {
		w.failed.Add(1)
		if w.o.OnError != nil {
			w.o.OnError(err)
		}
		return
	}
	if w.o.Appended != nil {
		w.o.Appended()
	}
}

// Append appends one canonical event as the next record.
func (w *Writer) Append(event []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lock == nil {
		return fault.New(fault.Unavailable, "the audit trail %s is closed", w.path)
	}
	if err := w.flock(); err != nil {
		return err
	}
	defer unix.Flock(int(w.lock.Fd()), unix.LOCK_UN)
	size, err := w.current()
	if err != nil {
		return err
	}
	line, hash := journal.AppendRecord(w.line[:0], w.seq+1, w.head, event)
	if cap(line) <= journal.MaxLine(limits.AuditMaxEventBytes) {
		w.line = line
	}
	if size > 0 && size+int64(len(line)) > w.o.MaxBytes {
		if err := w.rotate(); err != nil {
			return err
		}
		size = 0
	}
	if n, err := w.f.Write(line); err != nil {
		if n > 0 {
			w.f.Truncate(size)
		}
		w.known = false
		return fault.Wrap(fault.IO, err, "appending to the audit trail %s failed; the event is not in it", w.path)
	}
	w.known, w.end, w.seq, w.head = true, size+int64(len(line)), w.seq+1, hash
	return nil
}

// current opens the trail if need be (again, when another writer rotated
// it), makes sure seq and head are those of its last record, and returns
// its size. The path's stat, while it names the file open, gives the
// size too: one system call an append.
func (w *Writer) current() (int64, error) {
	var st unix.Stat_t
	if w.f != nil {
		if err := unix.Stat(w.path, &st); err != nil || st.Ino != w.ino {
			w.f.Close()
			w.f, w.known = nil, false
		}
	}
	if w.f == nil {
		if err := w.openFile(&st); err != nil {
			return 0, err
		}
	}
	size := st.Size
	if w.known && size == w.end {
		return size, nil
	}
	var err error
	if size == 0 {
		w.seq, w.head = w.carried()
	} else if w.seq, w.head, err = lastRecord(w.f, size, w.path); err != nil {
		if size, err = w.cutTornAppend(size); err != nil {
			return w.setAside(err)
		}
	}
	w.known, w.end = true, size
	return size, nil
}

// cutTornAppend removes what a writer killed in the middle of its write
// left at the end of a trail of size bytes: a part of the record that
// would have followed the last one (its number next, chained to it).
// The killed writer's call never returned, so no call's event is lost;
// the trail ends in a record again, and the chain goes on in the same
// file. Anything else at the end fails, for setAside: returns the size
// after the cut.
func (w *Writer) cutTornAppend(size int64) (int64, error) {
	n := min(size, 2*int64(journal.MaxLine(limits.AuditMaxEventBytes)))
	buf := make([]byte, n)
	if _, err := w.f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return 0, fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", w.path)
	}
	nl := bytes.LastIndexByte(buf, '\n')
	if nl < 0 && n < size {
		return 0, fault.New(fault.Integrity, "the last line of the audit trail %s is longer than any record", w.path)
	}
	end := size - n + int64(nl) + 1
	seq, head := w.carried()
	if end > 0 {
		var err error
		if seq, head, err = lastRecord(w.f, end, w.path); err != nil {
			return 0, err
		}
	}
	torn := buf[nl+1:]
	next := []byte(`{"seq":` + strconv.FormatUint(seq+1, 10) + `,"prev":"` + head + `","hash":"`)
	if len(torn) == 0 || !bytes.HasPrefix(next, torn[:min(len(torn), len(next))]) {
		return 0, fault.New(fault.Integrity, "the audit trail %s ends mid-line", w.path)
	}
	if err := w.f.Truncate(end); err != nil {
		return 0, fault.Wrap(fault.IO, err, "the audit trail %s cannot be repaired", w.path)
	}
	w.seq, w.head = seq, head
	return end, nil
}

// setAside moves a trail that does not end in a record (one written by
// an older capkit as plain JSON lines, or ending mid-line) aside as a
// rotated file would be, and starts a new chain whose first record says
// so: the old file is kept as it is, for audit verify to judge, and the
// calls go on being audited.
func (w *Writer) setAside(why error) (int64, error) {
	aside, err := w.moveAside(".unchained")
	if err != nil {
		return 0, err
	}
	if err := w.carry(0, journal.Genesis); err != nil {
		return 0, err
	}
	w.seq, w.head = 0, journal.Genesis
	r := slog.NewRecord(time.Now(), slog.LevelWarn, "audit trail set aside", 0)
	r.AddAttrs(slog.String("file", aside), slog.String("why", fault.As(why).Message))
	line, hash := journal.EncodeRecord(1, journal.Genesis, audit.Encode(r).JSON)
	if _, err := w.f.Write(line); err != nil {
		w.f.Truncate(0)
		return 0, fault.Wrap(fault.IO, err, "appending to the audit trail %s failed", w.path)
	}
	w.known, w.end, w.seq, w.head = true, int64(len(line)), 1, hash
	return w.end, nil
}

// openFile opens the trail, and sets st to its stat.
func (w *Writer) openFile(st *unix.Stat_t) error {
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fault.Wrap(fault.CodeOf(err), err, "the audit trail %s cannot be opened", w.path)
	}
	if err := regular(f, w.path); err != nil {
		f.Close()
		return err
	}
	if err := unix.Fstat(int(f.Fd()), st); err != nil {
		f.Close()
		return fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", w.path)
	}
	w.f, w.ino = f, st.Ino
	return nil
}

// rotate renames the full trail aside, keeps its last record in the lock
// file for every writer, and opens a new trail.
func (w *Writer) rotate() error {
	if err := w.carry(w.seq, w.head); err != nil {
		return err
	}
	if _, err := w.moveAside(""); err != nil {
		return err
	}
	w.known, w.end = true, 0
	return nil
}

// moveAside renames the trail to FILE.<UTC time><suffix> and opens a new
// FILE, returning the name it was given.
func (w *Writer) moveAside(suffix string) (string, error) {
	name := filepath.Base(w.path)
	aside := name + "." + time.Now().UTC().Format("20060102T150405.000000000Z") + suffix
	if err := noreplace.Rename(w.dir, name, aside); err != nil {
		return "", fault.Wrap(fault.IO, err, "moving the audit trail %s aside failed", w.path)
	}
	w.f.Close()
	w.f, w.known = nil, false
	var st unix.Stat_t
	return aside, w.openFile(&st)
}

// carry writes the last record's number and hash to the lock file:
// "seq hash\n".
func (w *Writer) carry(seq uint64, head string) error {
	b := []byte(strconv.FormatUint(seq, 10) + " " + head + "\n")
	if _, err := w.lock.WriteAt(b, 0); err != nil {
		return fault.Wrap(fault.IO, err, "the audit trail's lock file cannot be written")
	}
	if err := w.lock.Truncate(int64(len(b))); err != nil {
		return fault.Wrap(fault.IO, err, "the audit trail's lock file cannot be written")
	}
	return nil
}

// carried is the number and hash an empty trail continues from: what the
// lock file kept at the last rotation, or the start of a chain.
func (w *Writer) carried() (uint64, string) {
	var b [96]byte
	n, _ := w.lock.ReadAt(b[:], 0)
	seqText, head, ok := bytes.Cut(bytes.TrimSuffix(b[:n], []byte("\n")), []byte(" "))
	seq, err := strconv.ParseUint(string(seqText), 10, 64)
	if !ok || err != nil || len(head) != len(journal.Genesis) {
		return 0, journal.Genesis
	}
	return seq, string(head)
}

// flock takes the lock file exclusively, waiting at most
// limits.AuditLockWait: a process holding it longer does not stall every
// call.
func (w *Writer) flock() error {
	fd := int(w.lock.Fd())
	var deadline time.Time
	wait := 50 * time.Microsecond
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) && !errors.Is(err, unix.EINTR) {
			return fault.Wrap(fault.IO, err, "locking the audit trail %s failed", w.path)
		}
		if deadline.IsZero() {
			deadline = time.Now().Add(limits.AuditLockWait)
		} else if time.Now().After(deadline) {
			return fault.New(fault.Unavailable, "the audit trail %s stayed locked by another process for %v", w.path, limits.AuditLockWait)
		}
		time.Sleep(wait)
		wait = min(2*wait, 5*time.Millisecond)
	}
}

// Close closes the trail's files.
func (w *Writer) Close(context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.lock == nil {
		return nil
	}
	var errs []error
	if w.f != nil {
		errs = append(errs, w.f.Close())
	}
	errs = append(errs, w.lock.Close(), w.dir.Close())
	w.f, w.lock = nil, nil
	return errors.Join(errs...)
}

// lastRecord reads and checks the last record of a trail of size bytes.
// A trail that does not end in a record (ends mid-line, or holds lines
// of another format) fails with integrity: appending after it would
// hide what is wrong with it.
func lastRecord(f *os.File, size int64, path string) (uint64, string, error) {
	n := min(size, int64(journal.MaxLine(limits.AuditMaxEventBytes)))
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return 0, "", fault.Wrap(fault.IO, err, "the audit trail %s cannot be read", path)
	}
	if buf[n-1] != '\n' {
		return 0, "", fault.New(fault.Integrity, "the audit trail %s ends mid-line", path)
	}
	body := buf[:n-1]
	start := bytes.LastIndexByte(body, '\n') + 1
	if start == 0 && n < size {
		return 0, "", fault.New(fault.Integrity, "the last line of the audit trail %s is longer than any record", path)
	}
	rec, err := journal.DecodeRecord(body[start:], limits.AuditMaxEventBytes)
	if err != nil {
		return 0, "", fault.Wrap(fault.Integrity, err, "the last line of the audit trail %s is not a record of this format", path)
	}
	return rec.Seq, rec.Hash, nil
}

func regular(f *os.File, path string) error {
	st, err := f.Stat()
	if err != nil {
		return fault.Wrap(fault.IO, err, "%s cannot be read", path)
	}
	if !st.Mode().IsRegular() {
		return fault.Wrap(fault.InvalidInput, fs.ErrInvalid, "%s is not a regular file", path)
	}
	return nil
}
