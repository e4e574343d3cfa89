package sandbox

import (
	"encoding/binary"
	"runtime"
	"slices"
	"strings"
	"testing"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// seccompData is the kernel's struct seccomp_data for one call on a
// little-endian machine, as x/net/bpf's virtual machine sees it: the
// machine loads 32-bit words big-endian where the kernel loads them in
// the host's order, so each word is written big-endian at its offset (an
// argument's low word first, as on the host).
func seccompData(auditArch uint32, nr uint32, args ...uint64) []byte {
	b := make([]byte, 64)
	binary.BigEndian.PutUint32(b[0:], nr)
	binary.BigEndian.PutUint32(b[4:], auditArch)
	for i, a := range args {
		binary.BigEndian.PutUint32(b[16+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[16+8*i+4:], uint32(a>>32))
	}
	return b
}

// TestSeccompProgram runs the filter in x/net/bpf's virtual machine: the
// verdict for each call, including the ones a 64-bit comparison would let
// through.
func TestSeccompProgram(t *testing.T) {
	if err := seccompArch(); err != nil {
		t.Skip(err)
	}
	id := uint32(auditArch)
	eperm, enosys := uint32(retErrno|unix.EPERM), uint32(retErrno|unix.ENOSYS)
	for _, tc := range []struct {
		name    string
		data    func() []byte
		sockets socketPolicy
		want    uint32
	}{
		{"read", func() []byte { return seccompData(id, unix.SYS_READ, 0) }, unixSockets, retAllow},
		{"another architecture", func() []byte { return seccompData(unix.AUDIT_ARCH_I386, 3) }, unixSockets, retKill},
		{"mount", func() []byte { return seccompData(id, unix.SYS_MOUNT) }, unixSockets, eperm},
		{"io_uring_setup", func() []byte { return seccompData(id, unix.SYS_IO_URING_SETUP, 8, 0) }, unixSockets, eperm},
		{"ptrace", func() []byte { return seccompData(id, unix.SYS_PTRACE, 16, 1) }, unixSockets, eperm},
		{"clone3", func() []byte { return seccompData(id, unix.SYS_CLONE3) }, unixSockets, enosys},
		{"clone of a thread", func() []byte { return seccompData(id, unix.SYS_CLONE, unix.CLONE_VM|unix.CLONE_THREAD) }, unixSockets, retAllow},
		{"clone of a user namespace", func() []byte { return seccompData(id, unix.SYS_CLONE, unix.CLONE_NEWUSER|17) }, unixSockets, eperm},
		{"ioctl TCGETS", func() []byte { return seccompData(id, unix.SYS_IOCTL, 0, unix.TCGETS) }, unixSockets, retAllow},
		{"ioctl TIOCSTI", func() []byte { return seccompData(id, unix.SYS_IOCTL, 0, unix.TIOCSTI) }, unixSockets, eperm},
		{"ioctl TIOCSTI, high bits set", func() []byte { return seccompData(id, unix.SYS_IOCTL, 0, 1<<32|unix.TIOCSTI) }, unixSockets, eperm},
		{"ioctl TIOCLINUX", func() []byte { return seccompData(id, unix.SYS_IOCTL, 0, unix.TIOCLINUX) }, unixSockets, eperm},
		{"socket AF_UNIX", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_UNIX) }, unixSockets, retAllow},
		{"socket AF_INET", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_INET) }, unixSockets, eperm},
		{"socket AF_VSOCK", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_VSOCK) }, unixSockets, eperm},
		{"socket AF_UNIX, reduced", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_UNIX) }, noSockets, eperm},
		{"socketpair AF_UNIX, reduced", func() []byte { return seccompData(id, unix.SYS_SOCKETPAIR, unix.AF_UNIX) }, noSockets, retAllow},
		{"socket AF_INET, network", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_INET) }, netSockets, retAllow},
		{"socket AF_INET6, network", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_INET6) }, netSockets, retAllow},
		{"socket AF_UNIX, network", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_UNIX) }, netSockets, retAllow},
		{"socket AF_INET TCP, network", func() []byte {
			return seccompData(id, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_TCP)
		}, netSockets, retAllow},
		{"socket AF_INET6 UDP, network", func() []byte {
			return seccompData(id, unix.SYS_SOCKET, unix.AF_INET6, unix.SOCK_DGRAM, unix.IPPROTO_UDP)
		}, netSockets, retAllow},
		{"socket AF_INET MPTCP, network", func() []byte {
			return seccompData(id, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_STREAM, unix.IPPROTO_MPTCP)
		}, netSockets, eperm},
		{"socket AF_INET SCTP, network", func() []byte {
			return seccompData(id, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_SEQPACKET, unix.IPPROTO_SCTP)
		}, netSockets, eperm},
		{"socket AF_INET ICMP, network", func() []byte {
			return seccompData(id, unix.SYS_SOCKET, unix.AF_INET, unix.SOCK_DGRAM, unix.IPPROTO_ICMP)
		}, netSockets, eperm},
		{"socket AF_NETLINK, network", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_NETLINK) }, netSockets, eperm},
		{"socket AF_PACKET, network", func() []byte { return seccompData(id, unix.SYS_SOCKET, unix.AF_PACKET) }, netSockets, eperm},
		{"socket AF_INET, high bits, network", func() []byte { return seccompData(id, unix.SYS_SOCKET, 1<<32|unix.AF_PACKET) }, netSockets, eperm},
		{"socketpair AF_INET, network", func() []byte { return seccompData(id, unix.SYS_SOCKETPAIR, unix.AF_INET) }, netSockets, eperm},
		{"socketpair AF_NETLINK", func() []byte { return seccompData(id, unix.SYS_SOCKETPAIR, unix.AF_NETLINK) }, unixSockets, eperm},
		{"fchmodat 0755", func() []byte { return seccompData(id, unix.SYS_FCHMODAT, 0, 0, 0o755) }, unixSockets, retAllow},
		{"fchmodat 04755", func() []byte { return seccompData(id, unix.SYS_FCHMODAT, 0, 0, 0o4755) }, unixSockets, eperm},
		{"openat with 02755", func() []byte { return seccompData(id, unix.SYS_OPENAT, 0, 0, unix.O_CREAT, 0o2755) }, unixSockets, eperm},
		{"openat2", func() []byte { return seccompData(id, unix.SYS_OPENAT2) }, unixSockets, enosys},
		{"personality query", func() []byte { return seccompData(id, unix.SYS_PERSONALITY, 0xffffffff) }, unixSockets, retAllow},
		{"personality change", func() []byte { return seccompData(id, unix.SYS_PERSONALITY, 0x0040000) }, unixSockets, eperm},
		{"setsid", func() []byte { return seccompData(id, unix.SYS_SETSID) }, unixSockets, retAllow},
		{"setsid, reduced", func() []byte { return seccompData(id, unix.SYS_SETSID) }, noSockets, retAllow},
		{"setsid, reduced without a cgroup", func() []byte { return seccompData(id, unix.SYS_SETSID) }, noSockets, eperm},
		{"setpgid, reduced without a cgroup", func() []byte { return seccompData(id, unix.SYS_SETPGID, 0, 0) }, noSockets, eperm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := seccompProgram(tc.sockets, !strings.HasSuffix(tc.name, "without a cgroup"))
			if err != nil {
				t.Fatal(err)
			}
			prog, _ := bpf.Disassemble(raw)
			vm, err := bpf.NewVM(prog)
			if err != nil {
				t.Fatal(err)
			}
			got, err := vm.Run(tc.data())
			if err != nil || uint32(got) != tc.want {
				t.Errorf("verdict %#x (%v), want %#x", got, err, tc.want)
			}
		})
	}
	if hasX32 {
		raw, _ := seccompProgram(unixSockets, true)
		prog, _ := bpf.Disassemble(raw)
		vm, _ := bpf.NewVM(prog)
		if got, _ := vm.Run(seccompData(id, x32Bit|0)); uint32(got) != retKill {
			t.Errorf("an x32 call: verdict %#x, want kill", got)
		}
	}
}

// TestSeccompNames: every syscall the filter names has its number on
// x86-64, which has them all (on AArch64 the old ones without a number
// there are left out), and a name the table lacks is not a syscall of
// this architecture.
func TestSeccompNames(t *testing.T) {
	names := append(slices.Clone(deniedSyscalls), "socket", "setsid", "setpgid", "clone3", "openat2", "clone", "ioctl", "socketpair",
		"chmod", "fchmod", "fchmodat", "fchmodat2", "open", "openat", "creat", "mknod", "mknodat", "personality")
	for _, n := range names {
		if _, ok := syscallNumber(n); !ok && runtime.GOARCH == "amd64" {
			t.Errorf("no number for %s", n)
		}
	}
	if _, ok := syscallNumber("read"); ok {
		t.Error("the table holds a syscall the filter does not name")
	}
}
