//go:build !linux

package sandbox

import (
	"context"
	"io"
	"os"

	"github.com/capkit/capkit/fault"
)

// Run fails: the container needs Linux.
func Run(ctx context.Context, spec *Spec, opts *Options) (*Result, error) {
	return nil, fault.New(fault.Unavailable, "contained commands need Linux (namespaces, Landlock, seccomp); nothing was run")
}

// Main reports that there is no helper on this system.
func Main() int {
	io.WriteString(os.Stderr, "capkit: the sandbox helper needs Linux\n")
	return 125
}

type pending struct{}

// Close does nothing: there is no helper on this system.
func (w *Warm) Close() {}
