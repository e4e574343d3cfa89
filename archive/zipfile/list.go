package zipfile

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"runtime"

	"github.com/capkit/capkit/fault"
)

// Entry is one member as the central directory declares it.
type Entry struct {
	// Name is the member name; a directory's ends in "/".
	Name string `json:"name"`
	// Size is the declared uncompressed size (checked against its data only
	// by Verify and Extract).
	Size int64 `json:"size"`
	// Compressed is the size of the stored data.
	Compressed int64 `json:"compressed"`
}

// Listing is the result of List.
type Listing struct {
	Entries []Entry `json:"entries"`
	// Bytes is the declared uncompressed total.
	Bytes int64 `json:"bytes"`
}

// Verified is the result of Verify.
type Verified struct {
	Files   int          `json:"files"`
	Bytes   int64        `json:"bytes"`
	Members []MemberInfo `json:"members"`
}

// List checks the archive at the absolute path archive as Extract would
// (structure, names, kinds, declared sizes, bounds) without decompressing
// anything, and returns its members in central-directory order.
func List(ctx context.Context, archive string, opts *ReadOptions) (*Listing, error) {
	f, err := openAbs(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return listFile(ctx, f, opts)
}

// Verify checks the archive at the absolute path archive against expect
// exactly as Extract does, decompressing every member, and writes nothing.
func Verify(ctx context.Context, archive string, expect Expect, opts *ReadOptions) (*Verified, error) {
	f, err := openAbs(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return verifyFile(ctx, f, expect, opts)
}

func openAbs(archive string) (*os.File, error) {
	if !filepath.IsAbs(archive) {
		return nil, fault.New(fault.InvalidInput, "the archive must be an absolute path")
	}
	return openRegular(archive)
}

func readOpts(opts *ReadOptions) ReadOptions {
	if opts == nil {
		return ReadOptions{}
	}
	return *opts
}

func open(ctx context.Context, f *os.File, lim Limits) (*archive, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fault.As(err)
	}
	return openArchive(ctx, f, st.Size(), lim)
}

func listFile(ctx context.Context, f *os.File, opts *ReadOptions) (*Listing, error) {
	lim, err := readOpts(opts).Limits.resolve()
	if err != nil {
		return nil, err
	}
	a, err := open(ctx, f, lim)
	if err != nil {
		return nil, err
	}
	l := &Listing{Entries: make([]Entry, len(a.members)), Bytes: a.total}
	for i, m := range a.members {
		name := m.name
		if m.dir {
			name += "/"
		}
		l.Entries[i] = Entry{Name: name, Size: m.size, Compressed: int64(m.zf.CompressedSize64)}
	}
	return l, nil
}

func verifyFile(ctx context.Context, f *os.File, expect Expect, opts *ReadOptions) (*Verified, error) {
	o := readOpts(opts)
	lim, err := o.Limits.resolve()
	if err != nil {
		return nil, err
	}
	if err := checkExpect(expect, lim); err != nil {
		return nil, err
	}
	a, err := open(ctx, f, lim)
	if err != nil {
		return nil, err
	}
	files, err := match(a, expect)
	if err != nil {
		return nil, err
	}
	mt := &meter{max: lim.MaxTotalBytes, total: a.total, progress: o.Progress}
	res := &Verified{Files: len(files), Members: make([]MemberInfo, len(files))}
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	err = forEach(ctx, min(runtime.GOMAXPROCS(0), maxWorkers), idx, func(ctx context.Context, i int) error {
		m := files[i]
		d, err := inflate(ctx, m, nil, mt)
		if err != nil {
			return err
		}
		if d != expect[m.name] {
			return memberFault(fault.Integrity, m.name, ErrDigest, "member %q does not match its expected SHA-256 (got %x)", m.name, d[:])
		}
		res.Members[i] = MemberInfo{Name: m.name, Size: m.size, SHA256: hex.EncodeToString(d[:])}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, m := range files {
		res.Bytes += m.size
	}
	return res, nil
}
