package zipfile

import (
	"context"
	"encoding/hex"
	"maps"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// Expect maps each expected member name (slash-separated, as stored in the
// archive, without a directory's trailing slash) to its SHA-256 digest.
type Expect map[string]Digest

// MemberInfo describes one regular-file member.
type MemberInfo struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"`
}

// Extracted is the result of Extract.
type Extracted struct {
	// Destination is the published directory.
	Destination string `json:"destination"`
	// Files and Bytes count the regular files written and their bytes.
	Files   int          `json:"files"`
	Bytes   int64        `json:"bytes"`
	Members []MemberInfo `json:"members"`
}

// maxWorkers bounds the members inflated at once.
const maxWorkers = 4

// Extract extracts the archive at the absolute path archive into dest, an
// absolute path that must not exist (its parent must), given the digest of
// every member. See the package documentation for what it guarantees.
// Failures: invalid_input (malformed archive, refused member, bad
// expectation), limit, integrity (unexpected, missing or mismatching
// members), conflict (dest exists), not_found, io.
func Extract(ctx context.Context, archive, dest string, expect Expect, opts *ExtractOptions) (*Extracted, error) {
	var o ExtractOptions
	if opts != nil {
		o = *opts
	}
	if !filepath.IsAbs(archive) || !filepath.IsAbs(dest) {
		return nil, fault.New(fault.InvalidInput, "archive and destination must be absolute paths")
	}
	if filepath.Clean(dest) == "/" {
		return nil, fault.New(fault.InvalidInput, "the destination must name a new entry inside an existing directory")
	}
	f, err := openRegular(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := scope.Host(dest)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	res, err := extractInto(ctx, f, t, expect, o)
	if err != nil {
		return nil, err
	}
	res.Destination = t.Name()
	return res, nil
}

// openRegular opens the archive at the host path name for reading
// without following a final symlink or blocking on a FIFO, and checks it
// is a regular file. It opens by path rather than through internal/scope
// (the tools' archives are opened there) so that List and Verify keep
// working where scope is unavailable (not Linux); the archive reader
// bounds what it reads whatever the file does meanwhile.
func openRegular(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, scope.Fault(err, filepath.Base(name))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, scope.Fault(err, filepath.Base(name))
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, scope.NotRegular(filepath.Base(name), st.Mode())
	}
	return f, nil
}

// checkExpect validates the expected names as member names.
func checkExpect(expect Expect, lim Limits) error {
	if len(expect) > lim.MaxFiles {
		return fault.New(fault.Limit, "%d expected members exceed the limit of %d", len(expect), lim.MaxFiles)
	}
	names := newNameSet()
	for _, name := range slices.Sorted(maps.Keys(expect)) {
		if ferr := checkName(name, lim.MaxPathDepth); ferr != nil {
			ferr.Message = "expected " + ferr.Message
			return ferr
		}
		if ferr := names.add(name, false); ferr != nil {
			ferr.Message = "expected " + ferr.Message
			return ferr
		}
	}
	return nil
}

// match checks the archive's members against expect exactly and returns the
// regular-file members.
func match(a *archive, expect Expect) ([]member, error) {
	files := make([]member, 0, len(expect))
	dirs := map[string]bool{}
	for name := range expect {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	seen := make(map[string]bool, len(expect))
	for _, m := range a.members {
		switch {
		case m.dir && dirs[m.name]:
		case !m.dir && hasKey(expect, m.name):
			seen[m.name] = true
			files = append(files, m)
		default:
			return nil, memberFault(fault.Integrity, m.name, ErrUnexpectedMember, "archive holds member %q, which was not expected", m.name+map[bool]string{true: "/"}[m.dir])
		}
	}
	if len(seen) != len(expect) {
		for _, name := range slices.Sorted(maps.Keys(expect)) {
			if !seen[name] {
				return nil, memberFault(fault.Integrity, name, ErrMissingMember, "expected member %q is not in the archive", name)
			}
		}
	}
	return files, nil
}

func hasKey(e Expect, k string) bool { _, ok := e[k]; return ok }

// extractInto extracts into t, a new directory: it checks the archive
// against expect, inflates the members into a staging directory, makes
// the tree durable and publishes it as t without replacing anything.
func extractInto(ctx context.Context, src *os.File, t *scope.Target, expect Expect, o ExtractOptions) (_ *Extracted, err error) {
	lim, err := o.Limits.resolve()
	if err != nil {
		return nil, err
	}
	a, files, err := plan(ctx, src, t, expect, lim)
	if err != nil {
		return nil, err
	}
	var digests []Digest
	err = t.CreateDir(ctx, "zip", func(stage *scope.Staged) error {
		dirList, err := makeDirs(stage, files)
		if err != nil {
			return err
		}
		mt := &meter{max: lim.MaxTotalBytes, total: a.total, progress: o.Progress}
		if digests, err = inflateAll(ctx, stage, files, expect, mt); err != nil {
			return err
		}
		return syncTree(stage, dirList)
	})
	if err != nil {
		return nil, err
	}
	return result(files, digests), nil
}

// plan opens the archive and checks it before anything is written: the
// expectation is well formed, the members match it exactly, the
// destination is new and no member uses the staging namespace.
func plan(ctx context.Context, src *os.File, t *scope.Target, expect Expect, lim Limits) (*archive, []member, error) {
	if err := checkExpect(expect, lim); err != nil {
		return nil, nil, err
	}
	st, err := src.Stat()
	if err != nil {
		return nil, nil, fault.As(err)
	}
	a, err := openArchive(ctx, src, st.Size(), lim)
	if err != nil {
		return nil, nil, err
	}
	files, err := match(a, expect)
	if err != nil {
		return nil, nil, err
	}
	if _, err := t.Lstat("the destination"); err == nil {
		return nil, nil, fault.New(fault.Conflict, "the destination already exists; extraction needs a new directory")
	} else if fault.CodeOf(err) != fault.NotFound {
		return nil, nil, err
	}
	for _, m := range files {
		if scope.IsStaging(m.name) {
			return nil, nil, scope.Reserved(m.name)
		}
	}
	return a, files, nil
}

// makeDirs creates in stage every directory the members need and returns
// them sorted, parents before children.
func makeDirs(stage *scope.Staged, files []member) ([]string, error) {
	dirs := map[string]bool{}
	for _, m := range files {
		for d := path.Dir(m.name); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	dirList := slices.Sorted(maps.Keys(dirs))
	for _, d := range dirList {
		if err := stage.Mkdir(d); err != nil {
			return nil, fault.Wrap(fault.IO, err, "creating directory %q failed", d)
		}
	}
	return dirList, nil
}

// inflateAll writes every member into stage on up to maxWorkers workers
// and returns their digests, in the order of files.
func inflateAll(ctx context.Context, stage *scope.Staged, files []member, expect Expect, mt *meter) ([]Digest, error) {
	digests := make([]Digest, len(files))
	idx := make([]int, len(files))
	for i := range idx {
		idx[i] = i
	}
	workers := min(runtime.GOMAXPROCS(0), maxWorkers)
	err := forEach(ctx, workers, idx, func(ctx context.Context, i int) error {
		d, err := inflateMember(ctx, stage, files[i], expect[files[i].name], mt)
		digests[i] = d
		return err
	})
	return digests, err
}

// inflateMember writes one member to a new file in stage, checks its
// digest against want and makes it durable.
func inflateMember(ctx context.Context, stage *scope.Staged, m member, want Digest, mt *meter) (Digest, error) {
	out, err := stage.Create(m.name)
	if err != nil {
		return Digest{}, fault.Wrap(fault.IO, err, "creating member %q failed", m.name)
	}
	d, err := inflate(ctx, m, out, mt)
	if err == nil && d != want {
		err = memberFault(fault.Integrity, m.name, ErrDigest, "member %q does not match its expected SHA-256 (got %x)", m.name, d[:])
	}
	if err == nil {
		if serr := out.Sync(); serr != nil {
			err = fault.Wrap(fault.IO, serr, "syncing member %q failed", m.name)
		}
	}
	if cerr := out.Close(); err == nil && cerr != nil {
		err = fault.Wrap(fault.IO, cerr, "closing member %q failed", m.name)
	}
	return d, err
}

// syncTree makes the directory entries durable before the tree is
// published, deepest first (CreateDir syncs the staging directory itself).
func syncTree(stage *scope.Staged, dirList []string) error {
	for _, d := range slices.Backward(dirList) {
		if err := stage.Sync(d); err != nil {
			return fault.Wrap(fault.IO, err, "syncing directory %q failed", d)
		}
	}
	return nil
}

// result reports the extracted members sorted by name.
func result(files []member, digests []Digest) *Extracted {
	res := &Extracted{Files: len(files), Members: make([]MemberInfo, len(files))}
	for i, m := range files {
		res.Bytes += m.size
		res.Members[i] = MemberInfo{Name: m.name, Size: m.size, SHA256: hex.EncodeToString(digests[i][:])}
	}
	slices.SortFunc(res.Members, func(x, y MemberInfo) int { return strings.Compare(x.Name, y.Name) })
	return res
}
