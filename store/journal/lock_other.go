//go:build !linux

package journal

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/scope"
)

var errPlatform = fault.New(fault.Unavailable, "journals need flock(2) and fdatasync(2) (Linux)")

func (j *Journal) flock(context.Context, bool) (func(), error) { return nil, errPlatform }
func fdatasync(*os.File) error                                 { return errPlatform }
func checkPrivate(*scope.Changes) error                        { return errPlatform }
