//go:build unix

package mcpserver

import (
	"os"

	"golang.org/x/sys/unix"
)

// pollable returns a duplicate of f whose IO goes through the Go runtime's
// poller, when f is a pipe or a socket, and a function that puts f back in
// blocking mode if it was. A stdio server's descriptors are blocking pipes;
// blocking reads and writes each hold a thread in a system call, and every
// request then costs the runtime a thread hand-off. Through the poller a
// request wakes one thread, and Close interrupts a pending Read. Terminals
// and files are left alone: their blocking mode is shared with other
// processes.
func pollable(f *os.File) (*os.File, func()) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return nil, nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, nil
	}
	dup, flags := -1, 0
	cerr := rc.Control(func(fd uintptr) {
		if flags, err = unix.FcntlInt(fd, unix.F_GETFL, 0); err == nil {
			dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		}
	})
	if cerr != nil || err != nil {
		return nil, nil
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, nil
	}
	restore := func() {
		if flags&unix.O_NONBLOCK == 0 {
			rc.Control(func(fd uintptr) { unix.SetNonblock(int(fd), false) })
		}
	}
	return os.NewFile(uintptr(dup), f.Name()), restore
}
