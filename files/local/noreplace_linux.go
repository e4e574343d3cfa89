//go:build linux

package local

import (
	"errors"

	"golang.org/x/sys/unix"
)

var errNoReplace = errors.New("rename without replacement is unsupported")

// renameNoReplace renames without replacing: renameat2(RENAME_NOREPLACE)
// fails with EEXIST when the destination exists, atomically.
func renameNoReplace(fromDir int, from string, toDir int, to string) error {
	return ignoringEINTR(func() error { return unix.Renameat2(fromDir, from, toDir, to, unix.RENAME_NOREPLACE) })
}
