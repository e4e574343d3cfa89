//go:build !linux

package script

import (
	"runtime/debug"
	"syscall"
)

func workerSysProcAttr() *syscall.SysProcAttr { return nil }

// limitMemory sets only the collector's soft limit: outside Linux the
// worker relies on the sampled heap bound and on being killed at its
// deadline.
func limitMemory(budget int64) error {
	debug.SetMemoryLimit(budget)
	return nil
}
