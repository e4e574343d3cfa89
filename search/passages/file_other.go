//go:build !linux

package passages

import (
	"context"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/atfile"
)

// FindFile searches the regular file at the absolute host path path; it
// needs Linux.
func FindFile(context.Context, string, string, *Options) (*Result, error) {
	return nil, fault.New(fault.Unavailable, "searching files needs Linux")
}

// FindIn searches the regular file name in the directory d; it needs
// Linux.
func FindIn(context.Context, *atfile.Dir, string, string, *Options) (*Result, error) {
	return nil, fault.New(fault.Unavailable, "searching files needs Linux")
}
