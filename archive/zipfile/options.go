package zipfile

import (
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Limits bound an archive. A zero field means the package default, which is
// also the hard limit: limits.ZipMaxFiles, limits.ZipMaxMemberBytes,
// limits.ZipMaxTotalBytes, limits.ZipMaxCentralDirectory and
// limits.ZipMaxPathDepth. A field may lower its bound, never raise it.
type Limits struct {
	MaxFiles                 int
	MaxMemberBytes           int64
	MaxTotalBytes            int64
	MaxCentralDirectoryBytes int64
	MaxPathDepth             int
}

func (l Limits) resolve() (Limits, error) {
	type bound struct {
		name string
		v    *int64
		hard int64
	}
	files, depth := int64(l.MaxFiles), int64(l.MaxPathDepth)
	for _, b := range []bound{
		{"MaxFiles", &files, limits.ZipMaxFiles},
		{"MaxMemberBytes", &l.MaxMemberBytes, limits.ZipMaxMemberBytes},
		{"MaxTotalBytes", &l.MaxTotalBytes, limits.ZipMaxTotalBytes},
		{"MaxCentralDirectoryBytes", &l.MaxCentralDirectoryBytes, limits.ZipMaxCentralDirectory},
		{"MaxPathDepth", &depth, limits.ZipMaxPathDepth},
	} {
		switch {
		case *b.v == 0:
			*b.v = b.hard
		case *b.v < 0 || *b.v > b.hard:
			return l, fault.New(fault.InvalidInput, "zip limit %s=%d is outside 1..%d", b.name, *b.v, b.hard)
		}
	}
	l.MaxFiles, l.MaxPathDepth = int(files), int(depth)
	return l, nil
}

// ExtractOptions configure Extract. The zero value is the default.
type ExtractOptions struct {
	Limits
	// Progress, if set, is told the bytes written so far and the total
	// declared by the archive. It is called from one goroutine at a time.
	Progress func(done, total int64)
}

// ReadOptions configure List and Verify. The zero value is the default.
type ReadOptions struct {
	Limits
	// Progress, as in ExtractOptions, for Verify.
	Progress func(done, total int64)
}

// CreateOptions configure Create. The zero value is the default.
type CreateOptions struct {
	Limits
	// Store writes members uncompressed instead of deflated.
	Store bool
	// Progress, if set, is told the bytes read so far and the total size of
	// the selected files.
	Progress func(done, total int64)
}
