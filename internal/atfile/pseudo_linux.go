//go:build linux

package atfile

import (
	"os"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
)

// Magic numbers <linux/magic.h> defines that golang.org/x/sys/unix does
// not export.
const (
	configfsMagic = 0x62656570
	fusectlMagic  = 0x65735543
	mqueueMagic   = 0x19800202
)

// pseudoFS names, by statfs magic, the filesystems whose files the kernel
// synthesises from its own state (processes, devices, security modules,
// tracing, control groups, firmware variables, namespaces) rather than
// stores: reading one can reveal capkit's own secrets (/proc/self/environ)
// or the host's, writing one reconfigures the kernel, and sizes and types
// mean nothing. Left out, because they hold ordinary data: tmpfs and
// devtmpfs (whose devices are refused by type anyway), ramfs, hugetlbfs,
// overlayfs and every disk, network and FUSE filesystem.
var pseudoFS = map[int64]string{
	unix.PROC_SUPER_MAGIC:      "procfs",
	unix.SYSFS_MAGIC:           "sysfs",
	unix.DEBUGFS_MAGIC:         "debugfs",
	unix.TRACEFS_MAGIC:         "tracefs",
	unix.SECURITYFS_MAGIC:      "securityfs",
	unix.CGROUP_SUPER_MAGIC:    "cgroupfs",
	unix.CGROUP2_SUPER_MAGIC:   "cgroup2fs",
	unix.BPF_FS_MAGIC:          "bpffs",
	configfsMagic:              "configfs",
	unix.EFIVARFS_MAGIC:        "efivarfs",
	unix.PSTOREFS_MAGIC:        "pstore",
	unix.SELINUX_MAGIC:         "selinuxfs",
	unix.SMACK_MAGIC:           "smackfs",
	unix.AAFS_MAGIC:            "apparmorfs",
	unix.DEVPTS_SUPER_MAGIC:    "devpts",
	mqueueMagic:                "mqueue",
	fusectlMagic:               "fusectl",
	unix.BINFMTFS_MAGIC:        "binfmt_misc",
	unix.AUTOFS_SUPER_MAGIC:    "autofs",
	unix.NSFS_MAGIC:            "nsfs",
	unix.PID_FS_MAGIC:          "pidfs",
	unix.RDTGROUP_SUPER_MAGIC:  "resctrl",
	unix.BINDERFS_SUPER_MAGIC:  "binderfs",
	unix.XENFS_SUPER_MAGIC:     "xenfs",
	unix.OPENPROM_SUPER_MAGIC:  "openpromfs",
	unix.USBDEVICE_SUPER_MAGIC: "usbdevfs",
	unix.DEVMEM_MAGIC:          "devmem",
	unix.ANON_INODE_FS_MAGIC:   "anon_inodefs",
	unix.SOCKFS_MAGIC:          "sockfs",
	unix.PIPEFS_MAGIC:          "pipefs",
	unix.BDEVFS_MAGIC:          "bdevfs",
	unix.DMA_BUF_MAGIC:         "dmabuf",
	unix.SECRETMEM_MAGIC:       "secretmem",
}

// checkFS refuses the open file fd if it lies on a pseudo-filesystem.
// role names it in messages.
func checkFS(fd int, role string) error {
	var sf unix.Statfs_t
	err := ignoringEINTR(func() error { return unix.Fstatfs(fd, &sf) })
	if err != nil {
		return fault.Wrap(fault.IO, err, "%s: reading its filesystem type failed", role)
	}
	if name := pseudoFS[int64(sf.Type)]; name != "" {
		return PseudoFS(role, name)
	}
	return nil
}

// checkEntryFS refuses the entry name of d if it lies on a
// pseudo-filesystem: opened with O_PATH, which neither reads it nor
// blocks, only to ask its filesystem's type.
func (d *Dir) checkEntryFS(name, role string) error {
	var fd int
	err := d.control(func(dfd int) (err error) {
		fd, err = unix.Openat(dfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return Fault(err, role)
	}
	defer unix.Close(fd)
	return checkFS(fd, role)
}

func ignoringEINTR(op func() error) error {
	for {
		if err := op(); err != unix.EINTR {
			return err
		}
	}
}

// PseudoFSOf returns the name of the pseudo-filesystem the host path path
// lies on, or "" for any other filesystem. Symlinks in path are followed:
// the host names it.
func PseudoFSOf(path string) (string, error) {
	var sf unix.Statfs_t
	if err := ignoringEINTR(func() error { return unix.Statfs(path, &sf) }); err != nil {
		return "", Fault(&os.PathError{Op: "statfs", Path: path, Err: err}, "directory")
	}
	return pseudoFS[int64(sf.Type)], nil
}

// Mount is a pseudo-filesystem mounted inside a directory.
type Mount struct {
	// Path is the host path of the mount point; FS names the filesystem.
	Path, FS string
}

// PseudoMounts returns the pseudo-filesystems mounted strictly below the
// host directory root, as the process's mount table lists them; one
// mounted below another listed one is left out.
func PseudoMounts(root string) ([]Mount, error) {
	infos, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !capability.Within(root, m.Mountpoint), false
	})
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "the mount table cannot be read")
	}
	slices.SortFunc(infos, func(a, b *mountinfo.Info) int { return strings.Compare(a.Mountpoint, b.Mountpoint) })
	var out []Mount
	for _, m := range infos {
		if m.Mountpoint == root || len(out) > 0 && capability.Within(out[len(out)-1].Path, m.Mountpoint) {
			continue
		}
		if fs, err := PseudoFSOf(m.Mountpoint); err == nil && fs != "" {
			out = append(out, Mount{Path: m.Mountpoint, FS: fs})
		}
	}
	return out, nil
}
