package files

import (
	"context"
	"hash/maphash"
	"io"
	"strconv"

	"github.com/capkit/capkit/fault"
)

// Version identifies the content of a file: its length and a 64-bit hash
// of its bytes (hash/maphash, seeded once per process).
//
// Versions are content-derived rather than derived from (size, mtime,
// inode, ctime): file timestamps have coarse granularity on Linux and inode
// numbers are reused, so two different contents can carry the same
// metadata stamp, and a guard built on it could let a lost update through.
// Producing a version costs one pass over the content, which the file
// tools make anyway (read_file counts every line; edit_file reads the
// whole file).
//
// What a Version does not guarantee: it is comparable only within one
// process (the seed is random per process), and it is not a cryptographic
// digest: it detects change, not tampering by someone who knows the seed.
// The zero Version means "no file".
type Version struct {
	size    int64
	sum     uint64
	present bool
}

var versionSeed = maphash.MakeSeed()

// VersionOf returns the version of content.
func VersionOf(content []byte) Version {
	return Version{size: int64(len(content)), sum: maphash.Bytes(versionSeed, content), present: true}
}

// IsZero reports whether v is the zero Version (no file).
func (v Version) IsZero() bool { return !v.present }

// Size is the length of the content v identifies.
func (v Version) Size() int64 { return v.size }

// String renders v for logs and tests, e.g. "v12-5f0c2a1b9d3e4f70".
func (v Version) String() string {
	if !v.present {
		return "absent"
	}
	return "v" + strconv.FormatInt(v.size, 10) + "-" + strconv.FormatUint(v.sum, 16)
}

// VersionHash computes a Version incrementally, for providers that stream
// content. The zero value is not usable; use NewVersionHash.
type VersionHash struct {
	h maphash.Hash
	n int64
}

// NewVersionHash returns an empty VersionHash.
func NewVersionHash() *VersionHash {
	v := &VersionHash{}
	v.h.SetSeed(versionSeed)
	return v
}

// Write adds p to the hashed content. It never fails.
func (v *VersionHash) Write(p []byte) (int, error) {
	v.n += int64(len(p))
	return v.h.Write(p)
}

// Version is the version of everything written so far.
func (v *VersionHash) Version() Version {
	return Version{size: v.n, sum: v.h.Sum64(), present: true}
}

// versionChunk is the read size of ReadVersion.
const versionChunk = 64 << 10

// ReadVersion reads r to its end and returns the version of what it read,
// checking ctx between chunks.
func ReadVersion(ctx context.Context, r io.Reader) (Version, error) {
	h := NewVersionHash()
	buf := make([]byte, versionChunk)
	for {
		if err := ctx.Err(); err != nil {
			return Version{}, fault.As(err)
		}
		n, err := r.Read(buf)
		h.Write(buf[:n])
		if err == io.EOF {
			return h.Version(), nil
		}
		if err != nil {
			return Version{}, err
		}
	}
}

// Holds reports whether g admits a file that exists (or not), whose
// version version returns (called only when it is needed): nil, or a
// conflict naming name that says what changed. Nothing was written when
// it fails.
func (g Guard) Holds(name string, exists bool, version func() (Version, error)) error {
	switch {
	case !g.Enabled:
		return nil
	case g.Version.IsZero() && exists:
		return fault.New(fault.Conflict, "%s: already exists (it was created after this session looked); read it first, then write", name)
	case g.Version.IsZero():
		return nil
	case !exists:
		return fault.New(fault.Conflict, "%s: was deleted since this session read it; nothing was written", name)
	}
	v, err := version()
	if err != nil {
		return err
	}
	if v != g.Version {
		return fault.New(fault.Conflict, "%s: changed since this session read it; read it again, then retry. Nothing was written", name)
	}
	return nil
}
