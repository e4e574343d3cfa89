// Package sqlitepin lets SQLite open a database in a directory the scope
// pinned (scope.Pinned): through the directory's descriptor, whatever is
// renamed or swapped on the way to it.
//
// scope.Pinned.Path names the database /proc/self/fd/N/name, which the
// kernel resolves to the open directory itself. SQLite, left alone, does
// not keep that path: before it opens a database it makes the name
// absolute and resolves every symbolic link in it (unixFullPathname's
// lstat and readlink of each element), and /proc/self/fd/N is one, so it
// would open the database, and later its -wal, -shm and -journal files
// and every new connection's, by the directory's host path as it was at
// that instant: a directory swapped for a symbolic link then leads them
// elsewhere. Path therefore installs, once, an lstat for SQLite's unix
// VFS (sqlite3_vfs.xSetSystemCall) that reports /proc/self/fd/N and
// /proc/PID/fd/N, for this process's PID and a descriptor N that is a
// directory, as that directory (fstat of N) rather than as a link, so
// SQLite keeps the path and every file it opens goes through the
// descriptor. Every other path is lstat'ed as before. Every capkit package
// that opens a SQLite database calls Ready first (lexindex, semindex,
// net/budget), so the change happens before any use of SQLite.
//
// What it does not cover: a database SQLite is given by another path; a
// descriptor closed while SQLite still uses the path (a Pinned must
// outlive the connections, as the indexes' do).
//
// Written by hand: SQLite offers no flag that keeps a path unresolved, and
// a VFS of our own would reimplement locking and shared memory.
// modernc.org/sqlite's C function pointers are Go func values (its own
// cFuncPointer), which is how the lstat is handed over.
package sqlitepin

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// Path is p's database path to hand SQLite, once Ready.
func Path(p *scope.Pinned) (string, error) {
	if err := Ready(); err != nil {
		return "", err
	}
	return p.Path(), nil
}

// Ready installs the lstat, once; every capkit package that opens a
// SQLite database calls it first, so that the change to SQLite's table
// of system calls happens before any use of it in the process. It fails
// (unavailable) if SQLite's VFS refuses the lstat.
func Ready() error { return install() }

var install = sync.OnceValue(func() error {
	if pid, err := os.Readlink("/proc/self"); err == nil {
		selfPID = pid
	}
	tls := libc.NewTLS()
	defer tls.Close()
	vfs := sqlite3.Xsqlite3_vfs_find(tls, 0)
	if vfs == 0 {
		return fault.New(fault.Unavailable, "SQLite has no default VFS")
	}
	// vfs is the address of C memory (modernc's allocator, not Go's heap).
	v := *(**sqlite3.Tsqlite3_vfs)(unsafe.Pointer(&vfs))
	name, err := libc.CString("lstat")
	if err != nil {
		return fault.Wrap(fault.Unavailable, err, "installing SQLite's lstat failed")
	}
	defer libc.Xfree(tls, name)
	get := *(*func(*libc.TLS, uintptr, uintptr) uintptr)(unsafe.Pointer(&struct{ uintptr }{v.FxGetSystemCall}))
	if original = get(tls, vfs, name); original == 0 {
		return fault.New(fault.Unavailable, "SQLite's VFS has no lstat to replace")
	}
	set := *(*func(*libc.TLS, uintptr, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{v.FxSetSystemCall}))
	if rc := set(tls, vfs, name, funcPointer(lstat)); rc != sqlite3.SQLITE_OK {
		return fault.New(fault.Unavailable, "SQLite refused the lstat that keeps a pinned directory's path (code %d)", rc)
	}
	return nil
})

var (
	// original is SQLite's own lstat.
	original uintptr
	// selfPID is this process's PID as /proc names it.
	selfPID string
)

// lstat is SQLite's lstat, with a pinned directory's descriptor path
// reported as the directory.
func lstat(tls *libc.TLS, path, buf uintptr) int32 {
	if fd, ok := ownDir(libc.GoString(path)); ok {
		return libc.Xfstat(tls, int32(fd), buf)
	}
	return (*(*func(*libc.TLS, uintptr, uintptr) int32)(unsafe.Pointer(&struct{ uintptr }{original})))(tls, path, buf)
}

// ownDir reports the descriptor p names when p is /proc/self/fd/N or
// /proc/PID/fd/N of this process and N is a directory.
func ownDir(p string) (int, bool) {
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return 0, false
	}
	who, n, ok := strings.Cut(rest, "/fd/")
	if !ok || who != "self" && (selfPID == "" || who != selfPID) {
		return 0, false
	}
	fd, err := strconv.Atoi(n)
	if err != nil || fd < 0 || strconv.Itoa(fd) != n {
		return 0, false
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return 0, false
	}
	return fd, true
}

// funcPointer is f as a C function pointer for modernc.org/sqlite: the
// address of its func value, which for a top-level function is static.
func funcPointer(f func(*libc.TLS, uintptr, uintptr) int32) uintptr {
	return *(*uintptr)(unsafe.Pointer(&struct {
		f func(*libc.TLS, uintptr, uintptr) int32
	}{f}))
}
