//go:build !linux

package sandbox

import (
	"context"

	"github.com/capkit/capkit/fault"
)

// Run fails: the container needs Linux.
func Run(ctx context.Context, spec *Spec, opts *Options) (*Result, error) {
	return nil, fault.New(fault.Unavailable, "contained commands need Linux (namespaces, Landlock, seccomp); nothing was run")
}

// Start fails: the container needs Linux.
func Start(ctx context.Context, spec *Spec, opts *Options) (*Process, error) {
	return nil, fault.New(fault.Unavailable, "contained servers need Linux (namespaces, Landlock, seccomp); nothing was started")
}

type pending struct{}

// Close does nothing: there is no helper on this system.
func (w *Warm) Close() {}
