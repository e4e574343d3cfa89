//go:build !linux

package local

import "errors"

var errNoReplace = errors.New("rename without replacement needs renameat2 RENAME_NOREPLACE (Linux)")

// renameNoReplace refuses: without renameat2 there is no atomic rename that
// never replaces, and a check-then-rename could replace a file created in
// between.
func renameNoReplace(int, string, int, string) error { return errNoReplace }
