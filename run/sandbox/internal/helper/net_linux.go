package helper

import (
	"errors"
	"syscall"
	"unsafe"
)

// proxyBacklog is the listen backlog of the proxy's listener: the
// connections the kernel holds until the parent accepts them.
const proxyBacklog = 128

// ifreqFlags is struct ifreq's name and flags (the rest of the union is
// padding here).
type ifreqFlags struct {
	name  [syscall.IFNAMSIZ]byte
	flags uint16
	_     [22]byte
}

// startNetwork brings up the loopback of the container's (empty) network
// namespace, listens on 127.0.0.1:ProxyPort there, and hands the
// listener to the parent on NetFD: the parent serves it from outside the
// container, and the helper keeps no copy.
func startNetwork() error {
	if err := loopbackUp(); err != nil {
		return wrap("sandbox helper: bringing up the loopback", err)
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return wrap("sandbox helper: the proxy's socket", err)
	}
	defer syscall.Close(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: ProxyPort, Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return wrap("sandbox helper: binding the proxy's socket", err)
	}
	if err := syscall.Listen(fd, proxyBacklog); err != nil {
		return wrap("sandbox helper: listening on the proxy's socket", err)
	}
	if err := syscall.Sendmsg(NetFD, []byte{0}, syscall.UnixRights(fd), nil, 0); err != nil {
		return wrap("sandbox helper: handing the proxy's socket to the parent", err)
	}
	return nil
}

// loopbackUp sets IFF_UP on lo.
func loopbackUp() error {
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer syscall.Close(fd)
	var r ifreqFlags
	copy(r.name[:], "lo")
	if err := ioctl(fd, syscall.SIOCGIFFLAGS, unsafe.Pointer(&r)); err != nil {
		return err
	}
	r.flags |= syscall.IFF_UP
	return ioctl(fd, syscall.SIOCSIFFLAGS, unsafe.Pointer(&r))
}

func ioctl(fd int, req uintptr, arg unsafe.Pointer) error {
	_, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), req, uintptr(arg))
	return errnoErr(e)
}

// errNetworkReduced: a network needs the container's own namespace.
var errNetworkReduced = errors.New("sandbox helper: a network needs full containment")
