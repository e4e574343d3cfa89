package textarchive

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/noreplace"
)

// Blobs are content-addressed: blobs/AB/ABCD… holds the bytes whose
// lowercase hex SHA-256 is ABCD… (AB its first two digits), private
// (0600), written once and never changed. A blob is staged in a staging
// directory of the root (atfile.MkdirStaging: a name no listing shows,
// flocked while its writer lives), recorded as pending, then renamed into
// place without replacing anything and committed with its version.

// stagedName is the staged blob's name inside its staging directory.
const stagedName = "blob"

// blobPath is the root-relative path of blob sha.
func blobPath(sha string) string { return blobsDir + "/" + sha[:2] + "/" + sha }

// staged is a blob written and synced in a staging directory.
type staged struct {
	a       *Archive
	dir     string // the staging directory's name in the root
	release func()
	sha     string
	size    int64
	pending int64 // its pending row, once recorded
}

// stageBlob copies at most max bytes of src into a new staging
// directory, hashing them, and syncs them.
func (a *Archive) stageBlob(ctx context.Context, src io.Reader, max int64, what string) (*staged, error) {
	sd, name, err := a.root.MkdirStaging(ctx, "archive")
	if err != nil {
		return nil, err
	}
	st := &staged{a: a, dir: name, release: func() { sd.Close() }}
	if err := st.write(ctx, src, max, what); err != nil {
		st.discard()
		return nil, err
	}
	step("stage.synced")
	return st, nil
}

func (st *staged) write(ctx context.Context, src io.Reader, max int64, what string) error {
	f, err := st.a.fs.OpenFile(st.dir+"/"+stagedName, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return atfile.Fault(err, "staged blob")
	}
	defer f.Close()
	h := sha256.New()
	n, err := copyHashing(ctx, f, h, io.LimitReader(src, max+1))
	switch {
	case err != nil:
		return err
	case n > max:
		return fault.LimitExceeded(what+" bytes", max, 0)
	}
	if err := f.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "syncing the staged blob failed")
	}
	st.sha, st.size = hex.EncodeToString(h.Sum(nil)), n
	return nil
}

// copyHashing copies src to w and h, checking ctx between chunks. h
// hashes on a goroutine of its own, behind the copy by at most
// hashingBuffers chunks: SHA-256 is about as slow as the copy itself, so
// done in turn a backup took the sum of both.
func copyHashing(ctx context.Context, w io.Writer, h hash.Hash, src io.Reader) (int64, error) {
	free := make(chan []byte, hashingBuffers)
	for range hashingBuffers {
		free <- make([]byte, 256<<10)
	}
	full := make(chan []byte, hashingBuffers)
	hashed := make(chan struct{})
	go func() {
		defer close(hashed)
		for b := range full {
			h.Write(b)
			free <- b[:cap(b)]
		}
	}()
	n, err := copyChunks(ctx, w, src, free, full)
	close(full)
	<-hashed
	return n, err
}

// hashingBuffers is how many chunks copyHashing's hash may lag behind.
const hashingBuffers = 4

// copyChunks copies src to w in buffers taken from free, handing each
// chunk written to full.
func copyChunks(ctx context.Context, w io.Writer, src io.Reader, free chan []byte, full chan<- []byte) (int64, error) {
	var n int64
	for {
		if err := ctx.Err(); err != nil {
			return n, fault.As(err)
		}
		buf := <-free
		k, rerr := src.Read(buf)
		if k > 0 {
			if _, err := w.Write(buf[:k]); err != nil {
				return n, fault.Wrap(fault.IO, err, "writing the staged blob failed")
			}
			n += int64(k)
			full <- buf[:k]
		} else {
			free <- buf
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, fault.Wrap(fault.IO, rerr, "reading the source failed")
		}
	}
}

// record notes the staged blob as pending, so that cleanup knows it if
// the operation never commits.
func (st *staged) record(t *txn) error {
	return t.row(`INSERT INTO pending(staging, blob, started) VALUES (?1, ?2, ?3) RETURNING id`, st.dir, st.sha, t.a.stamp()).Scan(&st.pending)
}

// forget removes the pending record.
func (st *staged) forget(t *txn) error {
	if st.pending == 0 {
		return nil
	}
	return t.exec(`DELETE FROM pending WHERE id = ?1`, st.pending)
}

// discard removes the staging directory (what is left of it once the
// blob was published) and lets its lock go.
func (st *staged) discard() {
	st.a.fs.Remove(st.dir + "/" + stagedName)
	st.a.fs.Remove(st.dir)
	st.release()
}

// publishBlob renames the staged blob into place, never replacing
// anything, and makes the new name durable. A blob already there is
// kept when it holds the same bytes (content addressing stores them
// once); one that does not is a damaged original, reported.
func (a *Archive) publishBlob(st *staged) error {
	sub := blobsDir + "/" + st.sha[:2]
	made, err := a.mkdir(sub)
	if err != nil {
		return err
	}
	if made {
		if err := a.syncDir(blobsDir); err != nil {
			return err
		}
	}
	from, err := a.fs.OpenFile(st.dir, os.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return atfile.Fault(err, "staging directory")
	}
	defer from.Close()
	to, err := a.fs.OpenFile(sub, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return atfile.Fault(err, "blob directory")
	}
	defer to.Close()
	err = noreplace.RenameBetween(from, stagedName, to, st.sha)
	if fault.CodeOf(err) == fault.Conflict {
		return a.checkBlob(context.Background(), st.sha, st.size)
	}
	if err != nil {
		return err
	}
	return noreplace.SyncDir(to)
}

// mkdir makes the root-relative directory rel (private) unless it
// exists, and reports whether it made it.
func (a *Archive) mkdir(rel string) (bool, error) {
	err := a.fs.Mkdir(rel, 0o700)
	if errors.Is(err, fs.ErrExist) {
		st, lerr := a.fs.Lstat(rel)
		if lerr != nil || !st.IsDir() {
			return false, fault.New(fault.Integrity, "%s in the archive root is not a directory", rel)
		}
		return false, nil
	}
	if err != nil {
		return false, atfile.Fault(err, rel)
	}
	return true, nil
}

func (a *Archive) syncDir(rel string) error {
	d, err := a.fs.OpenFile(rel, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return atfile.Fault(err, rel)
	}
	defer d.Close()
	return noreplace.SyncDir(d)
}

// openBlob opens blob sha for reading: a regular file, never through a
// symbolic link.
func (a *Archive) openBlob(sha string) (*os.File, atfile.Stat, error) {
	d, err := atfile.OpenDirIn(a.fs, blobsDir+"/"+sha[:2])
	if err != nil {
		return nil, atfile.Stat{}, err
	}
	defer d.Close()
	return d.OpenRegular(sha, "blob "+sha)
}

// checkBlob re-hashes blob sha: integrity unless it holds size bytes
// whose SHA-256 is sha.
func (a *Archive) checkBlob(ctx context.Context, sha string, size int64) error {
	f, st, err := a.openBlob(sha)
	if err != nil {
		return err
	}
	defer f.Close()
	got, n, err := hashReader(ctx, f)
	if err != nil {
		return err
	}
	if got != sha || n != size || st.Size != size {
		return fault.New(fault.Integrity, "blob %s is damaged: its bytes no longer have that SHA-256 (restore it from a backup)", sha)
	}
	return nil
}

func hashReader(ctx context.Context, r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := copyHashing(ctx, io.Discard, h, r)
	if err != nil {
		return "", n, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// isBlobName reports whether name is 64 lowercase hex digits.
func isBlobName(name string) bool {
	if len(name) != 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
