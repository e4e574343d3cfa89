package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeArg makes the test binary a probe: it tries one thing from inside
// the container and prints "ok" or "denied: <errno>", so that a test can
// tell which layer refused (EPERM from seccomp, not ENOTTY from the tty).
const probeArg = "__probe"

func probe(args []string) int {
	if len(args) == 0 {
		fmt.Println("probe: no attack")
		return 2
	}
	err := attack(args[0], args[1:])
	if err != nil {
		fmt.Printf("denied: %v (%d)\n", err, errnoOf(err))
		return 1
	}
	fmt.Println("ok")
	return 0
}

func errnoOf(err error) int {
	var e syscall.Errno
	errors.As(err, &e)
	return int(e)
}

func attack(name string, args []string) error {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch name {
	case "read":
		b, err := os.ReadFile(arg(0))
		os.Stdout.Write(b)
		return err
	case "write":
		return os.WriteFile(arg(0), []byte("written from the sandbox\n"), 0o644)
	case "dial":
		c, err := net.Dial(arg(0), arg(1))
		if err == nil {
			c.Write([]byte("hello from the sandbox"))
			c.Close()
		}
		return err
	case "converse":
		// One line to a server, its one-line answer printed.
		c, err := net.Dial("tcp", arg(0))
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := c.Write([]byte("hello from the sandbox\n")); err != nil {
			return err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		fmt.Print(line)
		return err
	case "lookup":
		_, err := net.LookupHost(arg(0))
		return err
	case "listen":
		l, err := net.Listen("tcp", arg(0))
		if err == nil {
			l.Close()
		}
		return err
	case "abstract":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		return unix.Connect(fd, &unix.SockaddrUnix{Name: "@" + arg(0)})
	case "socket":
		family, _ := strconv.Atoi(arg(0))
		fd, err := unix.Socket(family, unix.SOCK_DGRAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "kill":
		pid, _ := strconv.Atoi(arg(0))
		return unix.Kill(pid, unix.SIGKILL)
	case "ptrace":
		pid, _ := strconv.Atoi(arg(0))
		return unix.PtraceAttach(pid)
	case "io_uring":
		var params [120]byte
		_, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, 8, uintptr(unsafe.Pointer(&params[0])), 0)
		return errOrNil(e)
	case "tiocsti":
		// The request with its high bits set is the same ioctl to the
		// kernel, which reads it as 32 bits.
		c := byte('x')
		req := uintptr(unix.TIOCSTI)
		if arg(0) == "high" {
			req |= 1 << 32
		}
		_, _, e := unix.Syscall(unix.SYS_IOCTL, 0, req, uintptr(unsafe.Pointer(&c)))
		return errOrNil(e)
	case "unshare":
		return unix.Unshare(unix.CLONE_NEWUSER)
	case "mount":
		return unix.Mount("none", "/tmp", "tmpfs", 0, "")
	case "memory":
		n, _ := strconv.ParseInt(arg(0), 10, 64)
		b, err := unix.Mmap(-1, 0, int(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return err
		}
		for i := 0; i < len(b); i += 4096 {
			b[i] = 1
		}
		return nil
	case "create-suid":
		fd, err := unix.Open(arg(0), unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL, 0o4755)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case "write-fd":
		fd, _ := strconv.Atoi(arg(0))
		_, err := unix.Write(fd, []byte("written from the sandbox"))
		return err
	case "openw":
		f, err := os.OpenFile(arg(0), os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		return err
	}
	return fmt.Errorf("probe: unknown attack %q", name)
}

func errOrNil(e syscall.Errno) error {
	if e != 0 {
		return e
	}
	return nil
}
