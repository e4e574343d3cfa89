package script

import (
	"bufio"
	"bytes"
	"os"
	"runtime/debug"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// workerSysProcAttr kills the worker if the parent dies.
func workerSysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

// limitMemory caps the worker's address space at what it has mapped now
// plus twice the budget (the garbage collector's headroom) and 64 MiB for
// the runtime, so an allocation past the budget fails and the worker dies
// with "out of memory" instead of taking the machine. The soft memory
// limit makes the collector work hard before that point.
func limitMemory(budget int64) error {
	vm, err := mappedBytes()
	if err != nil {
		return err
	}
	debug.SetMemoryLimit(budget)
	lim := uint64(vm + 2*budget + 64<<20)
	return unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: lim, Max: lim})
}

// mappedBytes is the process's virtual size (VmSize).
func mappedBytes() (int64, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && string(f[0]) == "VmSize:" {
			kb, err := strconv.ParseInt(string(f[1]), 10, 64)
			return kb << 10, err
		}
	}
	return 0, os.ErrNotExist
}
