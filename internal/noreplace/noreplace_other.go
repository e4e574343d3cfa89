//go:build !linux

package noreplace

import (
	"os"

	"github.com/capkit/capkit/fault"
)

func renameNoReplace(*os.File, string, *os.File, string) error {
	return fault.New(fault.Unavailable, "publishing without replacement needs renameat2 RENAME_NOREPLACE (Linux); refusing a weaker rename")
}
