//go:build linux && amd64

package sandbox

import "golang.org/x/sys/unix"

// The filter's architecture: x86-64. Its x32 ABI shares the syscall entry, marked by a bit of the number.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	hasX32    = true
)

// syscallNumbers are this architecture's numbers (x/sys/unix's) of the
// syscalls the filter names; one it does not have is left out.
var syscallNumbers = []struct {
	name string
	nr   uint32
}{
	{"acct", unix.SYS_ACCT},
	{"add_key", unix.SYS_ADD_KEY},
	{"bpf", unix.SYS_BPF},
	{"chmod", unix.SYS_CHMOD},
	{"chroot", unix.SYS_CHROOT},
	{"clone", unix.SYS_CLONE},
	{"clone3", unix.SYS_CLONE3},
	{"creat", unix.SYS_CREAT},
	{"delete_module", unix.SYS_DELETE_MODULE},
	{"fanotify_init", unix.SYS_FANOTIFY_INIT},
	{"fchmod", unix.SYS_FCHMOD},
	{"fchmodat", unix.SYS_FCHMODAT},
	{"fchmodat2", unix.SYS_FCHMODAT2},
	{"finit_module", unix.SYS_FINIT_MODULE},
	{"fsconfig", unix.SYS_FSCONFIG},
	{"fsmount", unix.SYS_FSMOUNT},
	{"fsopen", unix.SYS_FSOPEN},
	{"fspick", unix.SYS_FSPICK},
	{"init_module", unix.SYS_INIT_MODULE},
	{"io_uring_enter", unix.SYS_IO_URING_ENTER},
	{"io_uring_register", unix.SYS_IO_URING_REGISTER},
	{"io_uring_setup", unix.SYS_IO_URING_SETUP},
	{"ioctl", unix.SYS_IOCTL},
	{"ioperm", unix.SYS_IOPERM},
	{"iopl", unix.SYS_IOPL},
	{"kcmp", unix.SYS_KCMP},
	{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
	{"kexec_load", unix.SYS_KEXEC_LOAD},
	{"keyctl", unix.SYS_KEYCTL},
	{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE},
	{"mknod", unix.SYS_MKNOD},
	{"mknodat", unix.SYS_MKNODAT},
	{"mount", unix.SYS_MOUNT},
	{"mount_setattr", unix.SYS_MOUNT_SETATTR},
	{"move_mount", unix.SYS_MOVE_MOUNT},
	{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT},
	{"nfsservctl", unix.SYS_NFSSERVCTL},
	{"open", unix.SYS_OPEN},
	{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
	{"open_tree", unix.SYS_OPEN_TREE},
	{"openat", unix.SYS_OPENAT},
	{"openat2", unix.SYS_OPENAT2},
	{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
	{"personality", unix.SYS_PERSONALITY},
	{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
	{"pivot_root", unix.SYS_PIVOT_ROOT},
	{"process_vm_readv", unix.SYS_PROCESS_VM_READV},
	{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
	{"ptrace", unix.SYS_PTRACE},
	{"quotactl", unix.SYS_QUOTACTL},
	{"quotactl_fd", unix.SYS_QUOTACTL_FD},
	{"reboot", unix.SYS_REBOOT},
	{"request_key", unix.SYS_REQUEST_KEY},
	{"setpgid", unix.SYS_SETPGID},
	{"setns", unix.SYS_SETNS},
	{"setsid", unix.SYS_SETSID},
	{"socket", unix.SYS_SOCKET},
	{"socketpair", unix.SYS_SOCKETPAIR},
	{"swapoff", unix.SYS_SWAPOFF},
	{"swapon", unix.SYS_SWAPON},
	{"syslog", unix.SYS_SYSLOG},
	{"umount2", unix.SYS_UMOUNT2},
	{"unshare", unix.SYS_UNSHARE},
	{"uselib", unix.SYS_USELIB},
	{"userfaultfd", unix.SYS_USERFAULTFD},
	{"vhangup", unix.SYS_VHANGUP},
}
