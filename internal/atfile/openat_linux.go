//go:build linux

package atfile

import (
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openat is unix.Openat with the name passed from the stack when it is
// short, as almost every name in a walk is: unix.Openat copies it to a
// new heap allocation, once per file opened.
func openat(dirfd int, name string, flags int, mode uint32) (int, error) {
	var buf [256]byte
	if len(name) >= len(buf) || strings.IndexByte(name, 0) >= 0 {
		return unix.Openat(dirfd, name, flags, mode)
	}
	copy(buf[:], name)
	fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(flags|unix.O_LARGEFILE), uintptr(mode), 0, 0)
	if errno != 0 {
		return -1, errno
	}
	return int(fd), nil
}
