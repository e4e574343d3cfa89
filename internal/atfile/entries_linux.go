//go:build linux

package atfile

import (
	"bytes"
	"context"
	"encoding/binary"
	"io/fs"
	"os"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Entry is one directory entry: its name and the type bits of its mode
// (0 for a regular file, fs.ModeDir, fs.ModeSymlink...).
type Entry struct {
	Name string
	Type fs.FileMode
	// Ino is the inode number the directory lists (d_ino). A mount point
	// lists the covered directory's, and some filesystems (overlayfs)
	// may list another than the entry's stat has.
	Ino uint64
}

// direntBufs are getdents buffers.
var direntBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// ReadEntries returns d's entries sorted by name, staging names left out,
// with their types read from the directory itself (getdents64's d_type),
// failing with limit past max entries. role names d in messages.
// os.File.ReadDir reads the same, but for an entry of unknown type (a
// filesystem without d_type) it would lstat a path built from the
// directory's name, outside the open directory; here such an entry is
// lstat'ed relative to d. Like ReadNames, call it once per opened
// directory.
func (d *Dir) ReadEntries(ctx context.Context, max int, role string) ([]Entry, error) {
	bp := direntBufs.Get().(*[]byte)
	defer direntBufs.Put(bp)
	buf := *bp
	var out []Entry
	for {
		var n int
		err := d.control(func(fd int) (err error) {
			n, err = unix.Getdents(fd, buf)
			return err
		})
		if err != nil {
			return nil, Fault(&os.PathError{Op: "getdents", Path: role, Err: err}, role)
		}
		if n <= 0 {
			break
		}
		if out, err = d.parseDirents(buf[:n], out, role); err != nil {
			return nil, err
		}
		if len(out) > max {
			return nil, fault.LimitExceeded(role+": directory entries", int64(max), int64(len(out)))
		}
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// parseDirents appends the entries of one getdents64 batch to out. The
// batch's names are copied into one buffer, each entry's name a string
// over its part: one allocation per batch rather than per entry (the
// buffer, as long as the batch, never grows, so no byte behind a name
// moves or changes).
func (d *Dir) parseDirents(buf []byte, out []Entry, role string) ([]Entry, error) {
	// struct linux_dirent64: u64 d_ino, s64 d_off, u16 d_reclen,
	// u8 d_type, then the NUL-terminated name.
	const nameOff = 19
	names := make([]byte, 0, len(buf))
	for off := 0; off < len(buf); {
		if off+nameOff > len(buf) {
			return nil, fault.New(fault.IO, "%s: malformed directory entry", role)
		}
		reclen := int(binary.NativeEndian.Uint16(buf[off+16:]))
		if reclen <= nameOff || off+reclen > len(buf) {
			return nil, fault.New(fault.IO, "%s: malformed directory entry", role)
		}
		ino, typ, raw := binary.NativeEndian.Uint64(buf[off:]), buf[off+18], buf[off+nameOff:off+reclen]
		off += reclen
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		if len(raw) == 0 || raw[0] == '.' && (len(raw) == 1 || len(raw) == 2 && raw[1] == '.') ||
			bytes.HasPrefix(raw, []byte(StagingPrefix)) {
			continue
		}
		at := len(names)
		names = append(names, raw...)
		name := unsafe.String(&names[at], len(raw))
		mode, known := direntType(typ)
		if !known {
			st, err := d.lstat(name, role)
			if fault.CodeOf(err) == fault.NotFound {
				continue // removed since it was listed
			}
			if err != nil {
				return nil, err
			}
			mode = st.Mode.Type()
		}
		out = append(out, Entry{Name: name, Type: mode, Ino: ino})
	}
	return out, nil
}

// direntType is the mode type of a d_type, unless it is DT_UNKNOWN.
func direntType(t byte) (fs.FileMode, bool) {
	switch t {
	case unix.DT_REG:
		return 0, true
	case unix.DT_DIR:
		return fs.ModeDir, true
	case unix.DT_LNK:
		return fs.ModeSymlink, true
	case unix.DT_FIFO:
		return fs.ModeNamedPipe, true
	case unix.DT_SOCK:
		return fs.ModeSocket, true
	case unix.DT_CHR:
		return fs.ModeDevice | fs.ModeCharDevice, true
	case unix.DT_BLK:
		return fs.ModeDevice, true
	}
	return 0, false
}

// Readlink returns the target of the symbolic link name in d, at most
// limits.PathMaxBytes long.
func (d *Dir) Readlink(name, role string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	buf := make([]byte, limits.PathMaxBytes+1)
	var n int
	err := d.control(func(fd int) (err error) {
		n, err = unix.Readlinkat(fd, name, buf)
		return err
	})
	if err != nil {
		return "", Fault(&os.PathError{Op: "readlinkat", Path: name, Err: err}, role)
	}
	if n > limits.PathMaxBytes {
		return "", fault.LimitExceeded(role+": symbolic link target bytes", limits.PathMaxBytes, int64(n))
	}
	return string(buf[:n]), nil
}
