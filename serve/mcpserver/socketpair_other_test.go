//go:build !unix

package mcpserver

import (
	"os"
	"testing"
)

// socketPair is not made here: the benchmarks over sockets are skipped.
func socketPair(tb testing.TB) (*os.File, *os.File) {
	tb.Skip("socket pairs are made on unix only")
	return nil, nil
}

// cpuMeter reports nothing here: the process's CPU time is read on unix
// only.
func cpuMeter(*testing.B) func() { return func() {} }
