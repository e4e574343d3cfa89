package sandbox

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The seccomp filter is a deny list over the default allow: the syscalls
// that change the container (mounts, namespaces), reach other processes
// (ptrace, process_vm_*), or are frequent kernel attack surface (bpf,
// perf_event_open, userfaultfd, io_uring, keys) fail with EPERM; so do the
// ioctls that inject terminal input, clone with namespace flags, sockets of
// any family but AF_UNIX (with a network, AF_INET and AF_INET6 too, for
// TCP and UDP: the container's namespace holds only its loopback;
// reduced containment: socket at all), and
// personality changes, and modes with the set-user-ID or set-group-ID bit;
// in reduced containment without a cgroup, setsid and setpgid (a process
// group is then the only way to kill every process of a command). clone3, whose flags a filter cannot read, fails with ENOSYS so that C
// libraries fall back to clone (openat2 likewise, to openat). A syscall of another
// architecture or of the x32 ABI kills the process.
//
// The syscall numbers are x/sys/unix's, for the architecture built
// (seccomp_amd64.go, seccomp_arm64.go). The program is assembled here:
// go-seccomp-bpf's assembler compares arguments as 64-bit values, while
// the kernel reads ioctl's request and socket's family as 32-bit ints (a
// request with high bits set would pass an equality test and still be
// TIOCSTI); its tables, every architecture's, cost every capkit start
// more than the few numbers needed here.
var deniedSyscalls = []string{
	"mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen",
	"fsconfig", "fsmount", "fspick", "mount_setattr",
	"unshare", "setns",
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	"bpf", "perf_event_open", "userfaultfd",
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	"keyctl", "add_key", "request_key",
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"reboot", "swapon", "swapoff", "acct", "quotactl", "quotactl_fd",
	"open_by_handle_at", "name_to_handle_at", "lookup_dcookie", "syslog",
	"iopl", "ioperm", "vhangup", "fanotify_init", "uselib", "nfsservctl",
}

// nsFlags are the clone flags that create namespaces (CLONE_NEWTIME
// shares its bit with the exit signal in clone and works only with clone3
// and unshare, both denied).
const nsFlags = unix.CLONE_NEWNS | unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
	unix.CLONE_NEWIPC | unix.CLONE_NEWUTS | unix.CLONE_NEWCGROUP

// Return values of a seccomp filter.
const (
	retKill  = 0x80000000 // SECCOMP_RET_KILL_PROCESS
	retErrno = 0x00050000 // SECCOMP_RET_ERRNO | errno
	retAllow = 0x7fff0000
	x32Bit   = 0x40000000
)

// seccompArch fails on an architecture the filter has no syscall table
// for.
func seccompArch() error {
	if len(syscallNumbers) == 0 {
		return fmt.Errorf("seccomp filter: architecture %s is not supported", runtime.GOARCH)
	}
	return nil
}

// syscallNumber is the number of the syscall name on this architecture;
// ok is false when it has none.
func syscallNumber(name string) (nr uint32, ok bool) {
	for _, s := range syscallNumbers {
		if s.name == name {
			return s.nr, true
		}
	}
	return 0, false
}

// socketPolicy is which sockets a command may create.
type socketPolicy int

const (
	// noSockets: reduced containment, which shares the host's network
	// namespace.
	noSockets socketPolicy = iota
	// unixSockets: full containment, AF_UNIX only.
	unixSockets
	// netSockets: full containment with a network (Message.Network),
	// AF_UNIX, AF_INET and AF_INET6.
	netSockets
)

// socketsFor is the socket policy of a helper's message.
func socketsFor(m *message) socketPolicy {
	switch {
	case !m.Full:
		return noSockets
	case m.Network:
		return netSockets
	}
	return unixSockets
}

// seccompProgram assembles the filter with the sockets it allows;
// sessions says whether a process may leave its process group.
func seccompProgram(sockets socketPolicy, sessions bool) ([]bpf.RawInstruction, error) {
	if err := seccompArch(); err != nil {
		return nil, err
	}
	f := &filter{prog: []bpf.Instruction{
		bpf.LoadAbsolute{Off: 4, Size: 4},
		bpf.JumpIf{Cond: bpf.JumpEqual, Val: auditArch, SkipTrue: 1},
		bpf.RetConstant{Val: retKill},
		loadNr,
	}}
	if hasX32 {
		f.prog = append(f.prog,
			bpf.JumpIf{Cond: bpf.JumpGreaterOrEqual, Val: x32Bit, SkipFalse: 1},
			bpf.RetConstant{Val: retKill})
	}
	deny := deniedSyscalls
	if sockets == noSockets {
		deny = append(deny[:len(deny):len(deny)], "socket")
	}
	if !sessions {
		deny = append(deny[:len(deny):len(deny)], "setsid", "setpgid")
	}
	for _, name := range deny {
		f.deny(name, unix.EPERM)
	}
	f.deny("clone3", unix.ENOSYS)
	f.deny("openat2", unix.ENOSYS)
	// clone: flags are the first argument on amd64 and arm64.
	f.denyBits("clone", 0, nsFlags)
	f.denyEqual("ioctl", 1, unix.TIOCSTI, unix.TIOCLINUX)
	f.denyUnless("socketpair", 0, unix.AF_UNIX)
	switch sockets {
	case unixSockets:
		f.denyUnless("socket", 0, unix.AF_UNIX)
	case netSockets:
		f.denyUnless("socket", 0, unix.AF_UNIX, unix.AF_INET, unix.AF_INET6)
		// TCP and UDP only: Landlock's port rules govern TCP alone (an
		// MPTCP socket, which Go's Listen tries first, would pass them;
		// Go then falls back to TCP), and a protocol named by number
		// (SCTP, ICMP) could have the kernel load its module.
		f.denyUnless("socket", 2, 0, unix.IPPROTO_TCP, unix.IPPROTO_UDP)
	}
	// A set-user-ID or set-group-ID bit would make a file the container
	// writes a privileged program on the host (the container's user is the
	// host's: root, often): no call may set one. openat2 takes its mode in
	// a structure the filter cannot read, hence ENOSYS above (C libraries
	// and Go fall back to openat).
	for _, m := range []struct {
		name string
		arg  uint32
	}{{"chmod", 1}, {"fchmod", 1}, {"fchmodat", 2}, {"fchmodat2", 2}, {"open", 2}, {"openat", 3}, {"creat", 1}, {"mknod", 1}, {"mknodat", 2}} {
		f.denyBits(m.name, m.arg, unix.S_ISUID|unix.S_ISGID)
	}
	// personality: only the query (0xffffffff) and PER_LINUX.
	f.denyUnless("personality", 0, 0xffffffff, 0)
	f.prog = append(f.prog, bpf.RetConstant{Val: retAllow})
	return bpf.Assemble(f.prog)
}

// filter is a seccomp program being assembled: after each block the
// syscall number is loaded again, for the next.
type filter struct {
	prog []bpf.Instruction
}

var loadNr = bpf.LoadAbsolute{Off: 0, Size: 4}

// loadArg loads the low 32 bits of argument i (at 16+8i; they come first
// on these little-endian architectures): the kernel reads ioctl's request,
// socket's family and the modes as 32-bit values, so high bits must not
// let a call past a test.
func loadArg(i uint32) bpf.Instruction { return bpf.LoadAbsolute{Off: 16 + 8*i, Size: 4} }

func errno(e unix.Errno) bpf.Instruction { return bpf.RetConstant{Val: retErrno | uint32(e)} }

// block adds, for syscall name (when this architecture has it), a test of
// the number that skips body when it does not match.
func (f *filter) block(name string, body ...bpf.Instruction) {
	n, ok := syscallNumber(name)
	if !ok {
		return
	}
	f.prog = append(f.prog, bpf.JumpIf{Cond: bpf.JumpEqual, Val: n, SkipFalse: uint8(len(body))})
	f.prog = append(f.prog, body...)
}

// deny fails the syscall with e.
func (f *filter) deny(name string, e unix.Errno) { f.block(name, errno(e)) }

// denyBits fails it with EPERM when argument arg has any of mask's bits.
func (f *filter) denyBits(name string, arg, mask uint32) {
	f.block(name, loadArg(arg), bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: mask, SkipFalse: 1}, errno(unix.EPERM), loadNr)
}

// denyEqual fails it with EPERM when argument arg is one of values.
func (f *filter) denyEqual(name string, arg uint32, values ...uint32) {
	body := []bpf.Instruction{loadArg(arg)}
	for i, v := range values {
		// A match skips the remaining tests and the jump over the denial.
		body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(values) - i)})
	}
	f.block(name, append(body, bpf.Jump{Skip: 1}, errno(unix.EPERM), loadNr)...)
}

// denyUnless fails it with EPERM unless argument arg is one of allowed.
func (f *filter) denyUnless(name string, arg uint32, allowed ...uint32) {
	body := []bpf.Instruction{loadArg(arg)}
	for i, v := range allowed {
		// A match skips the remaining tests and the denial.
		body = append(body, bpf.JumpIf{Cond: bpf.JumpEqual, Val: v, SkipTrue: uint8(len(allowed) - i)})
	}
	f.block(name, append(body, errno(unix.EPERM), loadNr)...)
}

// seccompFilter is the filter as the helper installs it: struct
// sock_filter (code u16, jt u8, jf u8, k u32) in the host's byte order,
// assembled once per process for each socket policy and, for reduced
// containment, with a cgroup to end the command's processes (sessions
// allowed) or without.
func seccompFilter(sockets socketPolicy, sessions bool) ([]byte, error) {
	return filters[filterKind{sockets, sessions || sockets != noSockets}]()
}

type filterKind struct {
	sockets  socketPolicy
	sessions bool
}

var filters = map[filterKind]func() ([]byte, error){}

func init() {
	for _, k := range []filterKind{{noSockets, true}, {noSockets, false}, {unixSockets, true}, {netSockets, true}} {
		filters[k] = sync.OnceValues(func() ([]byte, error) { return encodeFilter(k) })
	}
}

func encodeFilter(k filterKind) ([]byte, error) {
	raw, err := seccompProgram(k.sockets, k.sessions)
	if err != nil {
		return nil, err
	}
	b := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		b = binary.NativeEndian.AppendUint16(b, r.Op)
		b = append(b, r.Jt, r.Jf)
		b = binary.NativeEndian.AppendUint32(b, r.K)
	}
	return b, nil
}
