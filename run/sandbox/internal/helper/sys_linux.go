package helper

import (
	"runtime"
	"syscall"
	"unsafe"
)

// The kernel interfaces package syscall does not name (see the package
// comment for why not golang.org/x/sys/unix). System calls numbered from
// 424 on have one number on every architecture.
const (
	sysOpenTree              = 428
	sysMoveMount             = 429
	sysCloseRange            = 436
	sysOpenat2               = 437
	sysMountSetattr          = 442
	sysLandlockCreateRuleset = 444
	sysLandlockAddRule       = 445
	sysLandlockRestrictSelf  = 446

	oPath              = 0x200000
	atEmptyPath        = 0x1000
	atSymlinkNofollow  = 0x100
	resolveNoSymlinks  = 0x04
	resolveBeneath     = 0x08
	openTreeClone      = 0x1
	atRecursive        = 0x8000
	moveMountFEmpty    = 0x4
	moveMountTEmpty    = 0x40
	mountAttrRdonly    = 0x1
	mountAttrNosuid    = 0x2
	mountAttrNodev     = 0x4
	closeRangeCloexecF = 0x4
	prSetSeccomp       = 22
	prCapbsetDrop      = 24
	prSetNoNewPrivs    = 38
	prCapAmbient       = 47
	prCapAmbientClear  = 4
	seccompModeFilter  = 2
	capVersion3        = 0x20080522
	capSetpcap         = 8
	capSysAdmin        = 21
	rlimitNproc        = 6
	rlimitMemlock      = 8
	rlimitMsgqueue     = 12
	landlockVersionArg = 0x1
	landlockPathRule   = 1
)

func openTree(path string, flags int) (int, error) {
	return openTreeAt(atFDCWD, path, flags)
}

func openTreeAt(dirfd int, path string, flags int) (int, error) {
	p, err := syscall.BytePtrFromString(path)
	if err != nil {
		return -1, err
	}
	fd, _, e := syscall.Syscall(sysOpenTree, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(flags))
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// openBeneath opens name, relative to dir, as an O_PATH descriptor
// without leaving dir or meeting a symbolic link in any element, the
// last one included (openat2 with RESOLVE_BENEATH and
// RESOLVE_NO_SYMLINKS: ELOOP).
func openBeneath(dir int, name string) (int, error) {
	return openat2(dir, name, resolveBeneath|resolveNoSymlinks)
}

// openNoSymlinks opens path as an O_PATH descriptor, refusing a symbolic
// link in any element, the last one included (ELOOP).
func openNoSymlinks(path string) (int, error) {
	return openat2(atFDCWD, path, resolveNoSymlinks)
}

func openat2(dir int, name string, resolve uint64) (int, error) {
	p, err := syscall.BytePtrFromString(name)
	if err != nil {
		return -1, err
	}
	how := [3]uint64{oPath | syscall.O_CLOEXEC, 0, resolve}
	fd, _, e := syscall.Syscall6(sysOpenat2, uintptr(dir), uintptr(unsafe.Pointer(p)), uintptr(unsafe.Pointer(&how)), unsafe.Sizeof(how), 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(fd), nil
}

// atFDCWD is AT_FDCWD, a variable so that it converts to the uintptr a
// system call takes.
var atFDCWD = -100

// moveMountTo attaches the detached tree fd on the entry the O_PATH
// descriptor target names.
func moveMountTo(fd, target int) error {
	empty := []byte{0}
	_, _, e := syscall.Syscall6(sysMoveMount, uintptr(fd), uintptr(unsafe.Pointer(&empty[0])), uintptr(target), uintptr(unsafe.Pointer(&empty[0])), moveMountFEmpty|moveMountTEmpty, 0)
	return errnoErr(e)
}

// mountAttr is struct mount_attr.
type mountAttr struct {
	set, clr, propagation, userns uint64
}

// mountSetattr sets attributes on the mount at path (relative to dirfd;
// "" with AT_EMPTY_PATH names dirfd's).
func mountSetattr(dirfd int, path string, flags int, set uint64) error {
	p := append([]byte(path), 0)
	a := mountAttr{set: set}
	_, _, e := syscall.Syscall6(sysMountSetattr, uintptr(dirfd), uintptr(unsafe.Pointer(&p[0])), uintptr(flags), uintptr(unsafe.Pointer(&a)), unsafe.Sizeof(a), 0)
	return errnoErr(e)
}

// closeRangeCloexec marks every descriptor from first on close-on-exec
// (the kernel takes the range's end as an unsigned int, on every
// architecture).
func closeRangeCloexec(first uint) error {
	_, _, e := syscall.Syscall(sysCloseRange, uintptr(first), uintptr(^uint32(0)), closeRangeCloexecF)
	return errnoErr(e)
}

func prctl(option int, arg2, arg3 uintptr) error {
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, uintptr(option), arg2, arg3, 0, 0, 0)
	return errnoErr(e)
}

// capHeader and capData are the capset structures (version 3: two data
// elements, 64 capabilities).
type capHeader struct {
	version uint32
	pid     int32
}

type capData struct {
	effective, permitted, inheritable uint32
}

// holdsCapability reports whether the calling thread has capability c
// effective.
func holdsCapability(c uint) bool {
	h := capHeader{version: capVersion3}
	var d [2]capData
	_, _, e := syscall.RawSyscall(syscall.SYS_CAPGET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
	return e == 0 && d[c/32].effective&(1<<(c%32)) != 0
}

func clearCapabilities() error {
	h := capHeader{version: capVersion3}
	var d [2]capData
	_, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&h)), uintptr(unsafe.Pointer(&d[0])), 0)
	return errnoErr(e)
}

func setrlimit(res int, v int64) error {
	lim := syscall.Rlimit{Cur: uint64(v), Max: uint64(v)}
	_, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, 0, uintptr(res), uintptr(unsafe.Pointer(&lim)), 0, 0, 0)
	return errnoErr(e)
}

// loadSeccomp installs the filter on the calling thread, which then execs
// the command (see restrictThread); no_new_privs must be set already.
func loadSeccomp(filter []syscall.SockFilter) error {
	prog := syscall.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	err := prctl(prSetSeccomp, seccompModeFilter, uintptr(unsafe.Pointer(&prog)))
	runtime.KeepAlive(filter)
	return err
}

func errnoErr(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}
