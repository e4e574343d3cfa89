package mcpserver

import (
	"os"

	"golang.org/x/sys/unix"
)

// pipeBytes is the capacity asked for the output pipe (Linux allows
// unprivileged processes up to /proc/sys/fs/pipe-max-size, 1 MiB by
// default).
const pipeBytes = 1 << 20

// growPipe enlarges the pipe f writes to, when it is one, so that a large
// result crosses it in a few writes instead of one per 64 KiB default
// capacity, each waking the reader. Best effort: the pipe stays as it is
// if the system refuses.
func growPipe(f *os.File) {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return
	}
	if rc, err := f.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, pipeBytes) })
	}
}
