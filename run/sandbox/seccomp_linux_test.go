package sandbox

import (
	"encoding/binary"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
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
	a, err := seccompArch()
	if err != nil {
		t.Skip(err)
	}
	nr := func(name string) uint32 {
		n, ok := a.SyscallNames[name]
		if !ok {
			t.Skipf("no %s on %s", name, a.Name)
		}
		return uint32(n)
	}
	id := uint32(a.ID)
	eperm, enosys := uint32(retErrno|unix.EPERM), uint32(retErrno|unix.ENOSYS)
	for _, tc := range []struct {
		name    string
		data    func() []byte
		sockets bool
		want    uint32
	}{
		{"read", func() []byte { return seccompData(id, nr("read"), 0) }, true, retAllow},
		{"another architecture", func() []byte { return seccompData(uint32(arch.I386.ID), 3) }, true, retKill},
		{"mount", func() []byte { return seccompData(id, nr("mount")) }, true, eperm},
		{"io_uring_setup", func() []byte { return seccompData(id, nr("io_uring_setup"), 8, 0) }, true, eperm},
		{"ptrace", func() []byte { return seccompData(id, nr("ptrace"), 16, 1) }, true, eperm},
		{"clone3", func() []byte { return seccompData(id, nr("clone3")) }, true, enosys},
		{"clone of a thread", func() []byte { return seccompData(id, nr("clone"), unix.CLONE_VM|unix.CLONE_THREAD) }, true, retAllow},
		{"clone of a user namespace", func() []byte { return seccompData(id, nr("clone"), unix.CLONE_NEWUSER|17) }, true, eperm},
		{"ioctl TCGETS", func() []byte { return seccompData(id, nr("ioctl"), 0, unix.TCGETS) }, true, retAllow},
		{"ioctl TIOCSTI", func() []byte { return seccompData(id, nr("ioctl"), 0, unix.TIOCSTI) }, true, eperm},
		{"ioctl TIOCSTI, high bits set", func() []byte { return seccompData(id, nr("ioctl"), 0, 1<<32|unix.TIOCSTI) }, true, eperm},
		{"ioctl TIOCLINUX", func() []byte { return seccompData(id, nr("ioctl"), 0, unix.TIOCLINUX) }, true, eperm},
		{"socket AF_UNIX", func() []byte { return seccompData(id, nr("socket"), unix.AF_UNIX) }, true, retAllow},
		{"socket AF_INET", func() []byte { return seccompData(id, nr("socket"), unix.AF_INET) }, true, eperm},
		{"socket AF_VSOCK", func() []byte { return seccompData(id, nr("socket"), unix.AF_VSOCK) }, true, eperm},
		{"socket AF_UNIX, reduced", func() []byte { return seccompData(id, nr("socket"), unix.AF_UNIX) }, false, eperm},
		{"socketpair AF_UNIX, reduced", func() []byte { return seccompData(id, nr("socketpair"), unix.AF_UNIX) }, false, retAllow},
		{"socketpair AF_NETLINK", func() []byte { return seccompData(id, nr("socketpair"), unix.AF_NETLINK) }, true, eperm},
		{"fchmodat 0755", func() []byte { return seccompData(id, nr("fchmodat"), 0, 0, 0o755) }, true, retAllow},
		{"fchmodat 04755", func() []byte { return seccompData(id, nr("fchmodat"), 0, 0, 0o4755) }, true, eperm},
		{"openat with 02755", func() []byte { return seccompData(id, nr("openat"), 0, 0, unix.O_CREAT, 0o2755) }, true, eperm},
		{"openat2", func() []byte { return seccompData(id, nr("openat2")) }, true, enosys},
		{"personality query", func() []byte { return seccompData(id, nr("personality"), 0xffffffff) }, true, retAllow},
		{"personality change", func() []byte { return seccompData(id, nr("personality"), 0x0040000) }, true, eperm},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := seccompProgram(tc.sockets)
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
	if a == arch.X86_64 {
		raw, _ := seccompProgram(true)
		prog, _ := bpf.Disassemble(raw)
		vm, _ := bpf.NewVM(prog)
		if got, _ := vm.Run(seccompData(id, x32Bit|0)); uint32(got) != retKill {
			t.Errorf("an x32 call: verdict %#x, want kill", got)
		}
	}
}
