//go:build !linux

package journal

import (
	"context"
	"os"

	"github.com/capkit/capkit/fault"
)

var errPlatform = fault.New(fault.Unavailable, "journals need flock(2) and fdatasync(2) (Linux)")

func (j *Journal) flock(context.Context, bool) (func(), error) { return nil, errPlatform }
func fdatasync(*os.File) error                                 { return errPlatform }
func checkPrivate(*os.Root) error                              { return errPlatform }
