//go:build !linux

package passages

import (
	"context"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

// FindFile searches the regular file at the absolute host path path; it
// needs Linux.
func FindFile(context.Context, string, string, *Options) (*Result, error) {
	return nil, fault.New(fault.Unavailable, "searching files needs Linux")
}

// findTarget searches the regular file t names; it needs Linux.
func findTarget(context.Context, *scope.Target, string, *Options) (*Result, error) {
	return nil, fault.New(fault.Unavailable, "searching files needs Linux")
}
