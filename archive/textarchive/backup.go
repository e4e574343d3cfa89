package textarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sys/unix"
	"modernc.org/sqlite"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/search/lexindex"
)

// A backup is one file: a tar stream (POSIX, readable with tar) of
//
//	capkit-archive-backup.json   the manifest (below)
//	archive.db                   a consistent snapshot of the database
//	blobs/AB/ABCD…               every blob a version names, in name order
//
// and nothing else. The manifest names the archive, its schema and the
// head of its chain, the database's SHA-256 and size, and the blobs'
// count, total size and the SHA-256 of their list ("SHA SIZE\n" per
// blob, in order); each blob's name is its SHA-256. A restore or a
// verification checks every entry against these before anything is
// published, and the manifest's own SHA-256 (BackupResult.ManifestSHA256)
// pins the whole backup for an operator who keeps it.

// The backup format's names.
const (
	backupFormat  = "capkit-text-archive-backup"
	backupVersion = 1
	manifestName  = "capkit-archive-backup.json"
)

// BackupManifest is a backup's first entry.
type BackupManifest struct {
	Format   string       `json:"format"`
	Version  int          `json:"version"`
	Archive  string       `json:"archive"`
	Schema   int          `json:"schema"`
	Created  string       `json:"created"`
	Head     head         `json:"head"`
	Database BackupObject `json:"database"`
	Blobs    BackupBlobs  `json:"blobs"`
	// TotalBytes is the database's bytes and the blobs'.
	TotalBytes int64 `json:"total_bytes"`
}

// BackupObject is one entry's digest and size.
type BackupObject struct {
	SHA256 string `json:"sha256"`
	Bytes  int64  `json:"bytes"`
}

// BackupBlobs are the blob entries: how many, their bytes, and the
// SHA-256 of their list.
type BackupBlobs struct {
	Count      int64  `json:"count"`
	Bytes      int64  `json:"bytes"`
	ListSHA256 string `json:"list_sha256"`
}

// BackupOptions bound a backup, a restore or a verification.
type BackupOptions struct {
	// MaxBytes bounds the aggregate (database and blobs); zero means
	// limits.ArchiveBackupMaxBytes, which is also the most it may be.
	// There is no bound on the number of objects.
	MaxBytes int64
	// ManifestSHA256, when set, is the manifest's SHA-256 a restore or a
	// verification must find (what the backup reported).
	ManifestSHA256 string
}

func (o *BackupOptions) maxBytes() (int64, error) {
	if o == nil || o.MaxBytes == 0 {
		return limits.ArchiveBackupMaxBytes, nil
	}
	if o.MaxBytes < 0 || o.MaxBytes > limits.ArchiveBackupMaxBytes {
		return 0, fault.New(fault.InvalidInput, "the backup bound must be 1 to %d bytes (%s)", int64(limits.ArchiveBackupMaxBytes), limits.Bytes(limits.ArchiveBackupMaxBytes))
	}
	return o.MaxBytes, nil
}

// checkAggregate refuses a backup of db and blob bytes past max.
func checkAggregate(db, blobs, max int64) error {
	if db < 0 || blobs < 0 || db > max || blobs > max-db {
		return fault.New(fault.Limit, "the backup's database (%d bytes) and blobs (%d bytes) exceed the aggregate bound of %d bytes", db, blobs, max)
	}
	return nil
}

// BackupResult says what a backup holds.
type BackupResult struct {
	File     string         `json:"file"`
	Manifest BackupManifest `json:"manifest"`
	// ManifestSHA256 pins the backup: give it to VerifyBackup and
	// Restore.
	ManifestSHA256 string `json:"manifest_sha256"`
}

// Backup writes a backup of the archive to the new file at the absolute
// host path file (which must not exist: it appears complete or not at
// all). The database is snapshotted in one read transaction, the
// snapshot is audited (its versions, chain and index) and hashed, and
// every entry, once copied, is read back from the new file and hashed: a
// damaged original, or a copy that differs from it, fails the backup
// (integrity) before anything is published.
func (a *Archive) Backup(ctx context.Context, file string, o *BackupOptions) (*BackupResult, error) {
	max, err := o.maxBytes()
	if err != nil {
		return nil, err
	}
	dest, err := scope.Host(file)
	if err != nil {
		return nil, err
	}
	defer dest.Close()
	if err := a.checkDestination(dest, file); err != nil {
		return nil, err
	}
	sd, staging, err := a.root.MkdirStaging(ctx, "archive-backup")
	if err != nil {
		return nil, err
	}
	defer func() {
		sd.Close()
		a.root.RemoveStaging(staging)
	}()
	snapPath := filepath.Join(a.dir, staging, dbName)
	if err := a.snapshot(ctx, snapPath); err != nil {
		return nil, err
	}
	step("backup.snapshot")
	snap, m, blobs, err := a.planBackup(ctx, snapPath, max)
	if err != nil {
		return nil, err
	}
	defer snap.closeDB()
	mdata, err := json.Marshal(m)
	if err != nil {
		return nil, fault.Wrap(fault.Internal, err, "encoding the manifest failed")
	}
	err = dest.Replace(ctx, func(f *os.File) error {
		// The snapshot is audited while the backup is written: nothing
		// is published unless both succeed, and the first failure ends
		// the other.
		g, gctx := errgroup.WithContext(ctx)
		g.Go(func() error { return auditSnapshot(gctx, snap) })
		g.Go(func() error { return a.writeBackup(gctx, f, mdata, m, snapPath, blobs) })
		if err := g.Wait(); err != nil {
			return err
		}
		step("backup.verified")
		step("backup.written")
		return nil
	}, &scope.ReplaceOptions{Role: "backup file", NoReplace: true, ReadWrite: true})
	if err != nil {
		return nil, err
	}
	step("backup.published")
	return &BackupResult{File: file, Manifest: *m, ManifestSHA256: sha256Hex(mdata)}, nil
}

// checkDestination refuses a backup file that exists (a symlink is
// refused as one, never followed, and a FIFO or a directory as what it
// is) or whose directory is the archive root or under it: the root holds
// only what the archive made, and a backup kept in it is lost with it.
func (a *Archive) checkDestination(dest *scope.Target, file string) error {
	if st, err := dest.Lstat("backup file"); err == nil {
		if !st.Mode.IsRegular() {
			return scope.NotRegular("the backup file "+clip.Text(file), st.Mode)
		}
		return fault.New(fault.Conflict, "%s exists: a backup is written to a new file", clip.Text(file))
	} else if fault.CodeOf(err) != fault.NotFound {
		return err
	}
	root, err := a.root.File().Stat()
	if err != nil {
		return scope.Fault(err, "archive root")
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(file))
	if err != nil {
		return scope.Fault(err, "the backup file's directory")
	}
	for p := dir; ; p = filepath.Dir(p) {
		st, err := os.Stat(p)
		if err != nil {
			return scope.Fault(err, "the backup file's directory")
		}
		if os.SameFile(st, root) {
			return fault.New(fault.InvalidInput, "%s is inside the archive root %s: keep a backup outside what it backs up", clip.Text(file), clip.Text(a.dir))
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// snapshot writes a consistent copy of the database to path without the
// staged operations, which a backup does not hold. The copy is SQLite's
// online backup (page by page, where VACUUM INTO rebuilt every table and
// index: two to three times the CPU), inside one read transaction of the
// archive's connection, so every step copies the same snapshot however
// other connections write meanwhile, and ctx is checked between steps.
func (a *Archive) snapshot(ctx context.Context, path string) error {
	err := a.locked(func() error {
		return a.read(ctx, "snapshotting the database", func(t *txn) error {
			if _, err := t.meta("id"); err != nil {
				return err
			}
			return a.conn.Raw(func(dc any) error { return copyPages(ctx, dc, path) })
		})
	})
	if err != nil {
		return err
	}
	db, conn, err := openDB(ctx, path, "rw")
	if err != nil {
		return err
	}
	defer db.Close()
	defer conn.Close()
	for _, q := range []string{`DELETE FROM pending`, `PRAGMA journal_mode = DELETE`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return dbFault(err, "preparing the snapshot")
		}
	}
	return nil
}

// snapshotStepPages is how many pages a step of the online backup copies
// between two checks of ctx (16 MiB of 4 KiB pages); a variable so that
// a test can take a small database in several steps.
var snapshotStepPages int32 = 4096

// copyPages copies the database of the driver connection dc, in the read
// transaction it holds, into a new database at path. The copy needs no
// durability of its own (it is read back into the backup, which is
// synced): no journal, no sync.
func copyPages(ctx context.Context, dc any, path string) error {
	src, ok := dc.(interface {
		NewBackup(string) (*sqlite.Backup, error)
	})
	if !ok {
		return fault.New(fault.Internal, "the SQLite driver has no online backup")
	}
	b, err := src.NewBackup(dsnFile(path) + "?mode=rwc&_pragma=journal_mode(off)&_pragma=synchronous(off)")
	if err != nil {
		return err
	}
	for more := true; more; {
		if err = ctx.Err(); err != nil {
			break
		}
		if more, err = b.Step(snapshotStepPages); err != nil {
			break
		}
		step("backup.snapshot.step")
	}
	if ferr := b.Finish(); err == nil {
		err = ferr
	}
	return err
}

// backupBlob is one blob a backup holds.
type backupBlob struct {
	sha  string
	size int64
}

// planBackup opens the snapshot at path and returns it (its owner closes
// it and audits it: auditSnapshot), its manifest and the blobs it names,
// refusing an aggregate past max.
func (a *Archive) planBackup(ctx context.Context, path string, max int64) (*Archive, *BackupManifest, []backupBlob, error) {
	snap, err := openSnapshot(ctx, path, a.now)
	if err != nil {
		return nil, nil, nil, err
	}
	m, blobs, err := a.manifest(ctx, snap, path, max)
	if err != nil {
		snap.closeDB()
		return nil, nil, nil, err
	}
	return snap, m, blobs, nil
}

// manifest is the backup's manifest of the snapshot at path, and the
// blobs it names.
func (a *Archive) manifest(ctx context.Context, snap *Archive, path string, max int64) (*BackupManifest, []backupBlob, error) {
	m := &BackupManifest{Format: backupFormat, Version: backupVersion, Archive: a.id, Schema: schemaVersion, Created: a.stamp()}
	var blobs []backupBlob
	err := snap.read(ctx, "reading the snapshot", func(t *txn) error {
		var err error
		if m.Head, err = t.head(); err != nil {
			return err
		}
		blobs, err = referencedBlobs(t)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if m.Database, err = hashFile(ctx, path); err != nil {
		return nil, nil, err
	}
	m.Blobs = blobSummary(blobs)
	if err := checkAggregate(m.Database.Bytes, m.Blobs.Bytes, max); err != nil {
		return nil, nil, err
	}
	m.TotalBytes = m.Database.Bytes + m.Blobs.Bytes
	return m, blobs, nil
}

// auditSnapshot audits a backup's snapshot in full but for the blobs,
// which the backup re-hashes as it copies them.
func auditSnapshot(ctx context.Context, snap *Archive) error {
	return snap.read(ctx, "auditing the snapshot", func(t *txn) error {
		r := &AuditReport{Full: true, Problems: []Problem{}, Notes: []string{}}
		au := &auditor{a: snap, t: t, r: r, referenced: map[string]int64{}, noBlobs: true}
		if err := au.run(); err != nil {
			return err
		}
		if !r.Clean() {
			return fault.New(fault.Integrity, "the archive does not audit clean (%s: %s): nothing was written; run capkit archive audit", r.Problems[0].Object, r.Problems[0].Problem)
		}
		return nil
	})
}

// openSnapshot opens a database copy outside any root, for reading and
// auditing it.
func openSnapshot(ctx context.Context, path string, now func() time.Time) (*Archive, error) {
	db, conn, err := openDB(ctx, path, "rw")
	if err != nil {
		return nil, err
	}
	s := &Archive{db: db, conn: conn, stmts: map[string]*sql.Stmt{}, now: now}
	err = s.read(ctx, "opening the snapshot", func(t *txn) error {
		v, err := readSchema(t)
		if err != nil {
			return err
		}
		if v != schemaVersion {
			return fault.New(fault.InvalidInput, "the database is at schema %d, not %d", v, schemaVersion)
		}
		if s.id, err = t.meta("id"); err != nil {
			return err
		}
		s.ix, err = lexindex.Embed(t.ctx, s.conn, indexName, "")
		return err
	})
	if err != nil {
		s.closeDB()
		return nil, err
	}
	return s, nil
}

func referencedBlobs(t *txn) ([]backupBlob, error) {
	rows, err := t.query(`SELECT DISTINCT blob, blob_bytes FROM versions WHERE blob IS NOT NULL ORDER BY blob`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []backupBlob
	for rows.Next() {
		var b backupBlob
		if err := rows.Scan(&b.sha, &b.size); err != nil {
			return nil, err
		}
		if !isBlobName(b.sha) || len(out) > 0 && out[len(out)-1].sha == b.sha {
			return nil, fault.New(fault.Integrity, "versions name blob %q with different sizes or a malformed name: run capkit archive audit", clip.Text(b.sha))
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// blobList accumulates the list digest of blob entries.
type blobList struct {
	h     hash.Hash
	count int64
	bytes int64
}

func newBlobList() *blobList { return &blobList{h: sha256.New()} }

func (l *blobList) add(sha string, size int64) {
	l.count++
	l.bytes += size
	fmt.Fprintf(l.h, "%s %d\n", sha, size)
}

func (l *blobList) summary() BackupBlobs {
	return BackupBlobs{Count: l.count, Bytes: l.bytes, ListSHA256: hex.EncodeToString(l.h.Sum(nil))}
}

func blobSummary(blobs []backupBlob) BackupBlobs {
	l := newBlobList()
	for _, b := range blobs {
		l.add(b.sha, b.size)
	}
	return l.summary()
}

func hashFile(ctx context.Context, path string) (BackupObject, error) {
	f, err := os.Open(path)
	if err != nil {
		return BackupObject{}, scope.Fault(err, "database snapshot")
	}
	defer f.Close()
	sum, n, err := hashReader(ctx, f)
	return BackupObject{SHA256: sum, Bytes: n}, err
}

// writeBackup writes the tar stream to f: the manifest, the snapshot
// and each blob, each entry read back from f and hashed as it is written
// (verifyEntries), so that what is checked is what the backup holds.
func (a *Archive) writeBackup(ctx context.Context, f *os.File, mdata []byte, m *BackupManifest, snapPath string, blobs []backupBlob) error {
	g, gctx := errgroup.WithContext(ctx)
	spans := make(chan span, verifyLag)
	g.Go(func() error { return verifyEntries(gctx, f, spans) })
	g.Go(func() error {
		defer close(spans)
		return a.copyEntries(gctx, &tarWriter{f: f, spans: spans}, mdata, m, snapPath, blobs)
	})
	return g.Wait()
}

func (a *Archive) copyEntries(ctx context.Context, tw *tarWriter, mdata []byte, m *BackupManifest, snapPath string, blobs []backupBlob) error {
	mtime, _ := time.Parse(time.RFC3339Nano, m.Created)
	tw.mtime = mtime.Truncate(time.Second)
	if err := tw.bytes(ctx, manifestName, mdata); err != nil {
		return err
	}
	snap, err := os.Open(snapPath)
	if err != nil {
		return scope.Fault(err, "database snapshot")
	}
	defer snap.Close()
	if err := tw.file(ctx, dbName, snap, m.Database); err != nil {
		return err
	}
	for _, b := range blobs {
		src, st, err := a.openBlob(b.sha)
		if err == nil && st.Size != b.size {
			src.Close()
			err = fault.New(fault.Integrity, "blob %s has %d bytes, not %d", b.sha, st.Size, b.size)
		}
		if err != nil {
			return fault.Wrap(fault.Integrity, err, "blob %s, which a version names, cannot be read: nothing was written; run capkit archive audit", b.sha)
		}
		err = tw.file(ctx, blobPath(b.sha), src, BackupObject{SHA256: b.sha, Bytes: b.size})
		src.Close()
		if err != nil {
			return err
		}
	}
	return tw.close()
}

// tarWriter writes a backup's tar stream to f. archive/tar formats each
// header (USTAR, or PAX where a name or a size needs it); the rest of the
// framing, each entry's zero padding to its 512-byte block and the two
// zero blocks that end the stream, is written here, because an entry's
// data is copied file to file by the kernel (copy_file_range, through
// (*os.File).ReadFrom), which archive/tar's Writer cannot do: its Write
// is the only way to account for an entry's bytes, and its ReadFrom is
// unexported and copies through a buffer. The bytes are then read once,
// back from f, to be hashed. Each chunk's write-out is started as soon as
// it is written (sync_file_range, not waiting), so the sync before
// publication waits for the last chunk, not for gigabytes. Every chunk
// goes to spans, and then each entry's end with the digest it must have.
// tar_test.go reads this framing back with archive/tar and GNU tar.
type tarWriter struct {
	f     *os.File
	off   int64
	mtime time.Time
	spans chan<- span
}

// span is a range of the backup file to hash or, with want set, the end
// of an entry, whose bytes must have that digest.
type span struct {
	off, n int64
	name   string
	want   *BackupObject
}

// copyChunkBytes is how much of an entry is copied before its write-out
// is started and it goes to the verifier; verifyLag is how many chunks
// the verifier may lag behind.
const (
	copyChunkBytes = 8 << 20
	verifyLag      = 4
)

// bytes writes the entry name holding data.
func (w *tarWriter) bytes(ctx context.Context, name string, data []byte) error {
	if err := w.header(name, int64(len(data))); err != nil {
		return err
	}
	if err := w.write(data); err != nil {
		return err
	}
	if err := w.send(ctx, span{off: w.off - int64(len(data)), n: int64(len(data))}); err != nil {
		return err
	}
	return w.end(ctx, name, BackupObject{SHA256: sha256Hex(data), Bytes: int64(len(data))})
}

// file writes the entry name holding want.Bytes of src, which must have
// want's digest.
func (w *tarWriter) file(ctx context.Context, name string, src *os.File, want BackupObject) error {
	if err := w.header(name, want.Bytes); err != nil {
		return err
	}
	for left := want.Bytes; left > 0; {
		n := min(copyChunkBytes, left)
		k, err := w.f.ReadFrom(io.LimitReader(src, n))
		w.off += k
		if err != nil {
			return fault.Wrap(fault.IO, err, "copying %s into the backup failed", name)
		}
		if k < n {
			return fault.New(fault.Integrity, "%s is shorter than its %d bytes: nothing was written; run capkit archive audit", name, want.Bytes)
		}
		left -= k
		unix.SyncFileRange(int(w.f.Fd()), w.off-k, k, unix.SYNC_FILE_RANGE_WRITE)
		if err := w.send(ctx, span{off: w.off - k, n: k}); err != nil {
			return err
		}
		step("backup.chunk")
	}
	return w.end(ctx, name, want)
}

// header writes the header of the entry name of size bytes. A name with
// a NUL byte or that is not UTF-8 is refused: USTAR would cut it at the
// NUL, and PAX holds UTF-8 only.
func (w *tarWriter) header(name string, size int64) error {
	if strings.IndexByte(name, 0) >= 0 || !utf8.ValidString(name) {
		return fault.New(fault.Internal, "the backup's entry name %q has a NUL byte or is not UTF-8", clip.Text(name))
	}
	var b bytes.Buffer
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o600, ModTime: w.mtime}
	if err := tar.NewWriter(&b).WriteHeader(hdr); err != nil {
		return fault.Wrap(fault.Internal, err, "formatting the backup's entry %s failed", name)
	}
	return w.write(b.Bytes())
}

// end pads the entry to its block and hands its end to the verifier.
func (w *tarWriter) end(ctx context.Context, name string, want BackupObject) error {
	if err := w.write(make([]byte, -w.off&(tarBlock-1))); err != nil {
		return err
	}
	return w.send(ctx, span{name: name, want: &want})
}

// close writes the stream's end: two zero blocks.
func (w *tarWriter) close() error { return w.write(make([]byte, 2*tarBlock)) }

const tarBlock = 512

func (w *tarWriter) write(p []byte) error {
	n, err := w.f.Write(p)
	w.off += int64(n)
	if err != nil {
		return fault.Wrap(fault.IO, err, "writing the backup failed")
	}
	return nil
}

func (w *tarWriter) send(ctx context.Context, s span) error {
	select {
	case w.spans <- s:
		return nil
	case <-ctx.Done():
		return fault.As(ctx.Err())
	}
}

// verifyEntries hashes each span of f as it comes and checks each
// entry's bytes against its digest.
func verifyEntries(ctx context.Context, f *os.File, spans <-chan span) error {
	buf := make([]byte, 1<<20)
	h := sha256.New()
	var n int64
	for s := range spans {
		if s.want != nil {
			if n != s.want.Bytes || hex.EncodeToString(h.Sum(nil)) != s.want.SHA256 {
				return fault.New(fault.Integrity, "%s no longer has its SHA-256 (or its size): nothing was written; run capkit archive audit", s.name)
			}
			h.Reset()
			n = 0
			continue
		}
		for off := s.off; off < s.off+s.n; {
			if err := ctx.Err(); err != nil {
				return fault.As(err)
			}
			k, err := f.ReadAt(buf[:min(int64(len(buf)), s.off+s.n-off)], off)
			if err != nil {
				return fault.Wrap(fault.IO, err, "reading the backup back failed")
			}
			h.Write(buf[:k])
			off += int64(k)
			n += int64(k)
		}
	}
	if err := ctx.Err(); err != nil {
		return fault.As(err)
	}
	return nil
}

// ParseBackupManifest reads a manifest strictly.
func ParseBackupManifest(data []byte) (*BackupManifest, error) {
	if len(data) > limits.ArchiveMaxManifestBytes {
		return nil, fault.LimitExceeded("backup manifest bytes", limits.ArchiveMaxManifestBytes, int64(len(data)))
	}
	var m BackupManifest
	if err := strictJSON(data, &m, "backup manifest"); err != nil {
		return nil, err
	}
	switch {
	case m.Format != backupFormat || m.Version != backupVersion:
		return nil, fault.New(fault.InvalidInput, "not a backup of this format (%q version %d)", clip.Text(m.Format), m.Version)
	case m.Schema < 1 || m.Schema > schemaVersion:
		return nil, fault.New(fault.InvalidInput, "the backup's schema %d is not one this capkit restores (1 to %d)", m.Schema, schemaVersion)
	case !isBlobName(m.Database.SHA256) || m.Database.Bytes <= 0:
		return nil, fault.New(fault.InvalidInput, "the backup's manifest names no database digest")
	case m.Blobs.Count < 0 || m.Blobs.Bytes < 0 || !isBlobName(m.Blobs.ListSHA256):
		return nil, fault.New(fault.InvalidInput, "the backup's manifest names no blob list")
	case m.Database.Bytes > limits.ArchiveBackupMaxBytes || m.Blobs.Bytes > limits.ArchiveBackupMaxBytes || m.TotalBytes != m.Database.Bytes+m.Blobs.Bytes:
		return nil, fault.New(fault.InvalidInput, "the backup's manifest sizes do not add up")
	case m.Archive == "" || len(m.Archive) > limits.ArchiveMaxNameBytes:
		return nil, fault.New(fault.InvalidInput, "the backup's manifest names no archive")
	}
	if _, err := parseHead(m.Head.String()); err != nil {
		return nil, fault.New(fault.InvalidInput, "the backup's manifest has no chain head")
	}
	return &m, nil
}

// sink receives a backup's entries as they are read: where to write each
// (nil: only hash it).
type sink interface {
	database() (io.WriteCloser, error)
	blob(sha string) (io.WriteCloser, error)
}

// readBackup reads a backup stream, checking every entry against its
// manifest (and the manifest against want, when set) and handing each to
// s, within max aggregate bytes. It returns the manifest once every entry
// and the stream's end checked.
func readBackup(ctx context.Context, r io.Reader, max int64, want string, s sink) (*BackupManifest, error) {
	tr := tar.NewReader(r)
	hdr, err := nextEntry(tr)
	if err == io.EOF {
		return nil, tarFault(err)
	}
	if err != nil {
		return nil, err
	}
	if hdr.Name != manifestName || hdr.Size > limits.ArchiveMaxManifestBytes {
		return nil, fault.New(fault.Integrity, "the backup does not start with its manifest")
	}
	mdata, err := io.ReadAll(tr)
	if err != nil {
		return nil, tarFault(err)
	}
	if want != "" && sha256Hex(mdata) != want {
		return nil, fault.New(fault.Integrity, "the backup's manifest does not have the SHA-256 given (%s)", clip.Text(want))
	}
	m, err := ParseBackupManifest(mdata)
	if err != nil {
		return nil, fault.New(fault.Integrity, "the backup's manifest: %s", fault.As(err).Message)
	}
	if err := checkAggregate(m.Database.Bytes, m.Blobs.Bytes, max); err != nil {
		return nil, err
	}
	if hdr, err = nextEntry(tr); err == io.EOF {
		return nil, tarFault(err)
	} else if err != nil {
		return nil, err
	}
	if hdr.Name != dbName || hdr.Size != m.Database.Bytes {
		return nil, fault.New(fault.Integrity, "the backup's second entry is not its database of %d bytes", m.Database.Bytes)
	}
	if err := readEntry(ctx, tr, s.database, m.Database, dbName); err != nil {
		return nil, err
	}
	list := newBlobList()
	last := ""
	for {
		hdr, err := nextEntry(tr)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		sha, ok := parseBlobEntry(hdr.Name)
		switch {
		case !ok:
			return nil, fault.New(fault.Integrity, "the backup holds an entry %q that is not a blob", clip.Text(hdr.Name))
		case sha <= last:
			return nil, fault.New(fault.Integrity, "the backup's blobs are out of order or repeated at %s", sha)
		case list.count >= m.Blobs.Count || hdr.Size > m.Blobs.Bytes-list.bytes:
			return nil, fault.New(fault.Integrity, "the backup holds more blobs or bytes than its manifest names")
		}
		if err := readEntry(ctx, tr, func() (io.WriteCloser, error) { return s.blob(sha) }, BackupObject{SHA256: sha, Bytes: hdr.Size}, "blob "+sha); err != nil {
			return nil, err
		}
		list.add(sha, hdr.Size)
		last = sha
	}
	if list.summary() != m.Blobs {
		return nil, fault.New(fault.Integrity, "the backup's blobs are not those its manifest lists")
	}
	return m, nil
}

// nextEntry reads the next header: a regular file, nothing else.
func nextEntry(tr *tar.Reader) (*tar.Header, error) {
	hdr, err := tr.Next()
	if err == io.EOF {
		return nil, err
	}
	if err != nil {
		return nil, tarFault(err)
	}
	if hdr.Typeflag != tar.TypeReg || hdr.Size < 0 {
		return nil, fault.New(fault.Integrity, "the backup holds %q, which is not a regular file entry", clip.Text(hdr.Name))
	}
	return hdr, nil
}

func tarFault(err error) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return fault.Wrap(fault.Integrity, err, "the backup is cut short")
	}
	return fault.Wrap(fault.Integrity, err, "the backup is not a tar stream this format writes")
}

// parseBlobEntry reads "blobs/AB/ABCD…".
func parseBlobEntry(name string) (string, bool) {
	if len(name) != len(blobsDir)+1+2+1+64 || name[:len(blobsDir)+1] != blobsDir+"/" {
		return "", false
	}
	sha := name[len(name)-64:]
	return sha, isBlobName(sha) && name == blobPath(sha)
}

// readEntry copies the current entry to where open says, hashing it, and
// checks it is want.
func readEntry(ctx context.Context, tr *tar.Reader, open func() (io.WriteCloser, error), want BackupObject, what string) error {
	w, err := open()
	if err != nil {
		return err
	}
	h := sha256.New()
	var n int64
	if w == nil {
		n, err = copyHashing(ctx, io.Discard, h, tr)
	} else {
		n, err = copyHashing(ctx, w, h, tr)
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fault.Wrap(fault.IO, cerr, "writing %s failed", what)
		}
	}
	if err != nil {
		if fe := fault.As(err); fe.Code == fault.IO && fe.Err == io.ErrUnexpectedEOF {
			return tarFault(io.ErrUnexpectedEOF)
		}
		return err
	}
	if n != want.Bytes || hex.EncodeToString(h.Sum(nil)) != want.SHA256 {
		return fault.New(fault.Integrity, "%s in the backup does not have its SHA-256: the backup is damaged or was altered", what)
	}
	return nil
}

// Restored says what a restore made.
type Restored struct {
	Dir      string         `json:"dir"`
	Manifest BackupManifest `json:"manifest"`
	Audit    *AuditReport   `json:"audit"`
}

// Restore restores the backup file into the new directory dir (which
// must not exist): every entry is written into a staging directory beside
// dir and checked against the manifest, the restored archive is audited
// in full (blobs, versions, chain, index, database), and only then is the
// staging directory renamed to dir, never replacing anything. On any
// failure nothing is published and the staging directory is removed.
func Restore(ctx context.Context, file, dir string, o *BackupOptions) (*Restored, error) {
	dir, err := absDir(dir)
	if err != nil {
		return nil, err
	}
	parent, err := openParentDir(dir)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	if _, err := parent.Lstat(filepath.Base(dir), "destination"); err == nil {
		return nil, fault.New(fault.Conflict, "%s exists: a restore makes a new directory", clip.Text(dir))
	} else if fault.CodeOf(err) != fault.NotFound {
		return nil, err
	}
	sd, staging, err := parent.MkdirStaging(ctx, "archive-restore")
	if err != nil {
		return nil, err
	}
	defer sd.Close()
	published := false
	defer func() {
		if !published {
			parent.RemoveStaging(staging)
		}
	}()
	stagingPath := filepath.Join(filepath.Dir(dir), staging)
	out, err := restoreInto(ctx, file, stagingPath, o)
	if err != nil {
		return nil, err
	}
	step("restore.verified")
	if err := publishDir(ctx, parent, staging, filepath.Base(dir)); err != nil {
		return nil, err
	}
	published = true
	step("restore.published")
	out.Dir = dir
	return out, nil
}

// restoreInto writes the backup into the directory at path and audits
// what it wrote.
func restoreInto(ctx context.Context, file, path string, o *BackupOptions) (*Restored, error) {
	max, err := o.maxBytes()
	if err != nil {
		return nil, err
	}
	want := ""
	if o != nil {
		want = o.ManifestSHA256
	}
	src, err := openBackup(file)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	if err := os.Mkdir(filepath.Join(path, blobsDir), 0o700); err != nil {
		return nil, fault.Wrap(fault.IO, err, "making the restored blob directory failed")
	}
	m, err := readBackup(ctx, src, max, want, &dirSink{path: path})
	if err != nil {
		return nil, err
	}
	step("restore.staged")
	r, err := openSnapshot(ctx, filepath.Join(path, dbName), time.Now)
	if err != nil {
		return nil, fault.New(fault.Integrity, "the restored database does not open: %s", fault.As(err).Message)
	}
	r.closeDB()
	a, err := Open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer a.Close()
	if err := a.matches(ctx, m); err != nil {
		return nil, err
	}
	rep, err := a.Audit(ctx, AuditOptions{})
	if err != nil {
		return nil, err
	}
	if !rep.Clean() {
		return nil, fault.New(fault.Integrity, "the restored archive does not audit clean (%s: %s): nothing was published", rep.Problems[0].Object, rep.Problems[0].Problem)
	}
	return &Restored{Manifest: *m, Audit: rep}, nil
}

// matches checks the archive is the one the manifest names, at its head.
func (a *Archive) matches(ctx context.Context, m *BackupManifest) error {
	return a.read(ctx, "checking the restored archive", func(t *txn) error {
		h, err := t.head()
		if err != nil {
			return err
		}
		if a.id != m.Archive || h != m.Head {
			return fault.New(fault.Integrity, "the restored database is not the archive and head its manifest names")
		}
		return nil
	})
}

func openBackup(file string) (*os.File, error) {
	t, err := scope.Host(file)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	f, _, err := t.OpenRegular("backup file")
	return f, err
}

// dirSink writes entries into a restored root at path.
type dirSink struct{ path string }

func (s *dirSink) database() (io.WriteCloser, error) { return s.create(dbName) }

func (s *dirSink) blob(sha string) (io.WriteCloser, error) {
	sub := filepath.Join(s.path, blobsDir, sha[:2])
	if err := os.Mkdir(sub, 0o700); err != nil && !os.IsExist(err) {
		return nil, fault.Wrap(fault.IO, err, "making a restored blob directory failed")
	}
	return s.create(blobPath(sha))
}

func (s *dirSink) create(rel string) (io.WriteCloser, error) {
	f, err := os.OpenFile(filepath.Join(s.path, filepath.FromSlash(rel)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "writing a restored file failed")
	}
	return f, nil
}

// VerifyBackup checks the backup file as Restore does, into a staging
// directory beside it that it removes: every entry against the manifest,
// and the archive it holds audited in full. Nothing is published.
func VerifyBackup(ctx context.Context, file string, o *BackupOptions) (*Restored, error) {
	abs, err := absDir(file)
	if err != nil {
		return nil, err
	}
	parent, err := openParentDir(abs)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	sd, staging, err := parent.MkdirStaging(ctx, "archive-verify")
	if err != nil {
		return nil, err
	}
	defer func() {
		sd.Close()
		parent.RemoveStaging(staging)
	}()
	return restoreInto(ctx, abs, filepath.Join(filepath.Dir(abs), staging), o)
}

// digestOnly hashes entries without writing them (the fuzz target's).
type digestOnly struct{}

func (digestOnly) database() (io.WriteCloser, error)   { return nil, nil }
func (digestOnly) blob(string) (io.WriteCloser, error) { return nil, nil }

// openParentDir opens the directory holding the absolute host path p.
func openParentDir(p string) (*atfile.Dir, error) { return atfile.OpenDir(filepath.Dir(p)) }
