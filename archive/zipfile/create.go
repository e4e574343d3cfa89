package zipfile

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/internal/scope"
)

// Source is one file to archive.
type Source struct {
	// Name is the member name: a relative slash-separated path obeying the
	// same rules Extract enforces.
	Name string
	// Path is the absolute path of the regular file to read. A final
	// symlink is not followed.
	Path string
}

// Created is the result of Create.
type Created struct {
	// Archive is the published archive.
	Archive string `json:"archive"`
	// Bytes is the archive's size.
	Bytes int64 `json:"bytes"`
	// Files counts the members; Members lists them with their digests in
	// the order given.
	Files   int          `json:"files"`
	Members []MemberInfo `json:"members"`
}

// Manifest renders the members as sha256sum prints them ("DIGEST  NAME"
// lines), the form Extract's expectation is parsed from by ParseManifest.
func (c *Created) Manifest() string {
	var b strings.Builder
	for _, m := range c.Members {
		b.WriteString(m.SHA256)
		b.WriteString("  ")
		b.WriteString(m.Name)
		b.WriteByte('\n')
	}
	return b.String()
}

// source is a file to archive and how to open it.
type source struct {
	name string
	open func() (*fileio.File, error)
}

// Create writes a new archive at the absolute path out, which must not
// exist, holding exactly the given files in the given order (deflated
// unless opts.Store). The archive is written privately (0600) beside out,
// fsynced, checked with the reader Extract uses, and published without
// replacing anything. Failures: invalid_input (bad name or source, a source
// that is not a regular file), denied (a source that is a symbolic link),
// limit, conflict (out exists), integrity (a source changed while it was
// read: ErrChanged), not_found, io.
func Create(ctx context.Context, out string, files []Source, opts *CreateOptions) (*Created, error) {
	var o CreateOptions
	if opts != nil {
		o = *opts
	}
	if !filepath.IsAbs(out) {
		return nil, fault.New(fault.InvalidInput, "the archive path must be absolute")
	}
	out = filepath.Clean(out)
	srcs := make([]source, len(files))
	for i, s := range files {
		if !filepath.IsAbs(s.Path) {
			return nil, fault.New(fault.InvalidInput, "source %q: path must be absolute", s.Name)
		}
		srcs[i] = source{name: s.Name, open: func() (*fileio.File, error) { return fileio.Open(s.Path) }}
	}
	t, err := scope.Host(out)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	res, err := createInto(ctx, srcs, t, o)
	if err != nil {
		return nil, err
	}
	res.Archive = out
	return res, nil
}

// createInto writes the new archive t from srcs.
func createInto(ctx context.Context, srcs []source, t *scope.Target, o CreateOptions) (_ *Created, err error) {
	lim, err := o.Limits.resolve()
	if err != nil {
		return nil, err
	}
	if len(srcs) > lim.MaxFiles {
		return nil, fault.New(fault.Limit, "%d files exceed the limit of %d members", len(srcs), lim.MaxFiles)
	}
	names := newNameSet()
	var dirBytes int64
	for _, s := range srcs {
		if ferr := checkName(s.name, lim.MaxPathDepth); ferr != nil {
			return nil, ferr
		}
		if ferr := names.add(s.name, false); ferr != nil {
			return nil, ferr
		}
		// A central-directory header, the name and the extended-timestamp
		// field archive/zip adds.
		dirBytes += dirHeaderLen + int64(len(s.name)) + 9
	}
	if dirBytes > lim.MaxCentralDirectoryBytes {
		return nil, fault.New(fault.Limit, "the central directory for these names would take %d bytes, more than the limit of %d", dirBytes, lim.MaxCentralDirectoryBytes)
	}
	if _, err := t.Lstat("the archive path"); err == nil {
		return nil, fault.New(fault.Conflict, "the archive path already exists; nothing is overwritten")
	} else if fault.CodeOf(err) != fault.NotFound {
		return nil, err
	}

	// Open every source first: sizes are bounded before anything is written.
	all := make([]*fileio.File, 0, len(srcs))
	defer func() {
		for _, f := range all {
			f.Close()
		}
	}()
	var total int64
	for _, s := range srcs {
		f, err := s.open()
		if err != nil {
			return nil, withName(err, s.name)
		}
		all = append(all, f)
		if f.Size() > lim.MaxMemberBytes {
			return nil, memberFault(fault.Limit, s.name, ErrSize, "file %q has %d bytes, more than the limit of %d per member", s.name, f.Size(), lim.MaxMemberBytes)
		}
		if total += f.Size(); total > lim.MaxTotalBytes {
			return nil, memberFault(fault.Limit, s.name, ErrSize, "the files hold more than %d bytes in all", lim.MaxTotalBytes)
		}
	}

	res := &Created{Files: len(srcs), Members: make([]MemberInfo, len(srcs))}
	write := func(tmp *os.File) error {
		size, err := writeMembers(ctx, tmp, srcs, all, res, total, lim, o)
		res.Bytes = size
		return err
	}
	// NoReplace: an archive created meanwhile is not replaced either.
	err = t.Replace(ctx, write, &scope.ReplaceOptions{Role: "the archive path", NoReplace: true, ReadWrite: true})
	if fault.CodeOf(err) == fault.Conflict {
		return nil, fault.New(fault.Conflict, "the archive path already exists; nothing is overwritten")
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// writeMembers writes the members to tmp and checks that Extract will
// accept the result before anyone can see it; it returns the archive's
// size.
func writeMembers(ctx context.Context, tmp *os.File, srcs []source, all []*fileio.File, res *Created, total int64, lim Limits, o CreateOptions) (int64, error) {
	bw := bufio.NewWriterSize(tmp, copyBuffer)
	zw := zip.NewWriter(bw)
	method := zip.Deflate
	if o.Store {
		method = zip.Store
	}
	mt := &meter{max: lim.MaxTotalBytes, total: total, progress: o.Progress}
	for i, s := range srcs {
		hdr := &zip.FileHeader{Name: s.name, Method: method, Modified: all[i].ModTime()}
		hdr.SetMode(0o644)
		w, err := zw.CreateHeader(hdr)
		if err != nil {
			return 0, fault.Wrap(fault.IO, err, "writing member %q failed", s.name)
		}
		d, err := copyMember(ctx, w, all[i], s.name, mt)
		if err != nil {
			return 0, err
		}
		res.Members[i] = MemberInfo{Name: s.name, Size: all[i].Size(), SHA256: hex.EncodeToString(d[:])}
	}
	if err := zw.Close(); err != nil {
		return 0, fault.Wrap(fault.IO, err, "finishing the archive failed")
	}
	if err := bw.Flush(); err != nil {
		return 0, fault.Wrap(fault.IO, err, "writing the archive failed")
	}
	st, err := tmp.Stat()
	if err != nil {
		return 0, fault.As(err)
	}
	if _, err := openArchive(ctx, tmp, st.Size(), lim); err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// copyMember copies f into w and returns the SHA-256 of what it copied.
// f yields exactly the size it had when opened and Verify then compares
// its metadata with those at open (fileio's stable read), so a file that
// changed while it was read fails with integrity (ErrChanged) naming the
// member, and the archive is not published.
func copyMember(ctx context.Context, w io.Writer, f *fileio.File, name string, mt *meter) (Digest, error) {
	h := sha256.New()
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := *bp
	for {
		if err := ctx.Err(); err != nil {
			return Digest{}, fault.As(err)
		}
		k, rerr := f.Read(buf)
		if k > 0 {
			h.Write(buf[:k])
			if _, err := w.Write(buf[:k]); err != nil {
				return Digest{}, fault.Wrap(fault.IO, err, "writing member %q failed", name)
			}
			mt.add(int64(k))
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			return Digest{}, withName(rerr, name)
		}
	}
	if err := f.Verify(); err != nil {
		return Digest{}, withName(err, name)
	}
	var d Digest
	h.Sum(d[:0])
	return d, nil
}

// withName adds the member name to a failure to open or read its file.
func withName(err error, name string) error {
	fe := fault.As(err)
	switch {
	case fe.Code == fault.NotFound:
		return fault.Wrap(fault.NotFound, err, "file %q does not exist", name)
	case errors.Is(err, ErrChanged):
		return memberFault(fault.Integrity, name, ErrChanged, "file %q changed while it was being archived; nothing was published: try again when it is stable", name)
	}
	out := *fe
	out.Message = fmt.Sprintf("file %q: %s", name, fe.Message)
	return &out
}
