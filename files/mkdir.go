package files

import (
	"context"

	"github.com/capkit/capkit/internal/scope"
)

// DirMaker is implemented by Providers that create directories; the tool
// that creates directories needs it, the other file tools do not.
type DirMaker interface {
	// MakeDir creates the directory t and its missing parents, reporting
	// whether it created it (false: it already was a directory). Something
	// else at t is invalid_input.
	MakeDir(ctx context.Context, t *scope.Target) (created bool, err error)
}
