package local

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/limits"
)

// direntBufs are getdents buffers.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// entries returns d's entries sorted by name, staging files left out, with
// their types read from the directory itself (getdents64's d_type), failing
// with limit past limits.WalkMaxFiles entries. os.File.ReadDir reads the
// same, but for an entry of unknown type (a filesystem without d_type) it
// would lstat a path built from the directory's name, outside the open
// directory; here such an entry is lstat'ed relative to d.
func (d *dirHandle) entries(ctx context.Context, display string) ([]files.DirEntry, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var out []files.DirEntry
	for {
		var n int
		err := ignoringEINTR(func() (err error) {
			n, err = unix.Getdents(d.fd, buf)
			return err
		})
		if err != nil {
			return nil, atfile.Fault(&os.PathError{Op: "getdents", Path: display, Err: err}, display)
		}
		if n <= 0 {
			break
		}
		// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen,
		// u8 d_type, then the NUL-terminated name.
		const nameOff = 19
		for off := 0; off < n; {
			if off+nameOff > n {
				return nil, fault.New(fault.IO, "%s: malformed directory entry", display)
			}
			reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
			if reclen <= nameOff || off+reclen > n {
				return nil, fault.New(fault.IO, "%s: malformed directory entry", display)
			}
			typ, raw := buf[off+18], buf[off+nameOff:off+reclen]
			off += reclen
			if i := bytes.IndexByte(raw, 0); i >= 0 {
				raw = raw[:i]
			}
			if len(raw) == 0 || raw[0] == '.' && (len(raw) == 1 || len(raw) == 2 && raw[1] == '.') ||
				bytes.HasPrefix(raw, []byte(files.TempPrefix)) {
				continue
			}
			name := string(raw)
			mode, known := direntType(typ)
			if !known {
				st, ok, err := d.lstat(name)
				if err != nil {
					return nil, atfile.Fault(&os.PathError{Op: "fstatat", Path: join(display, name), Err: err}, display)
				}
				if !ok {
					continue // removed since it was listed
				}
				mode = modeOf(&st)
			}
			out = append(out, files.DirEntry{Name: name, Type: mode})
		}
		if len(out) > limits.WalkMaxFiles {
			return nil, fault.LimitExceeded(display+": directory entries", limits.WalkMaxFiles, int64(len(out)))
		}
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
	}
	slices.SortFunc(out, func(a, b files.DirEntry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// direntType is the mode type of a d_type, unless it is DT_UNKNOWN.
func direntType(t byte) (os.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return os.ModeDir, true
	case unix.DT_LNK:
		return os.ModeSymlink, true
	case unix.DT_FIFO:
		return os.ModeNamedPipe, true
	case unix.DT_SOCK:
		return os.ModeSocket, true
	case unix.DT_CHR:
		return os.ModeDevice | os.ModeCharDevice, true
	case unix.DT_BLK:
		return os.ModeDevice, true
	}
	return 0, false
}
