// Package noreplace publishes a file or directory under a new name without
// ever replacing what is already there, and makes the change durable.
//
// It works on an open directory (an *os.File from os.Root.Open(".")), so
// both names are single elements inside that directory and nothing between
// the check and the rename can redirect either of them elsewhere.
//
// Linux only: renameat2(2) with RENAME_NOREPLACE is the one primitive that
// refuses to replace atomically. Where it is missing (another platform, an
// old kernel, a filesystem that does not support the flag) Rename fails
// with fault.Unavailable rather than fall back to a check-then-rename that
// could replace a destination created in between.
//
// This is the minimal piece the zipfile package needs; the state package
// owns general publication.
package noreplace

import (
	"os"
	"path/filepath"

	"github.com/capkit/capkit/fault"
)

// Rename renames from to to, both plain names inside dir, failing with
// fault.Conflict when to already exists, and then fsyncs dir so the new
// name survives a crash.
func Rename(dir *os.File, from, to string) error {
	if !plain(from) || !plain(to) {
		return fault.New(fault.Internal, "noreplace: %q and %q must be plain names", from, to)
	}
	if err := renameNoReplace(dir, from, dir, to); err != nil {
		return err
	}
	return SyncDir(dir)
}

// RenameBetween renames from in fromDir to to in toDir, both plain names,
// failing with fault.Conflict when to already exists. It does not sync
// either directory.
func RenameBetween(fromDir *os.File, from string, toDir *os.File, to string) error {
	if !plain(from) || !plain(to) {
		return fault.New(fault.Internal, "noreplace: %q and %q must be plain names", from, to)
	}
	return renameNoReplace(fromDir, from, toDir, to)
}

func plain(name string) bool {
	return name == filepath.Base(name) && name != "." && name != ".."
}

// SyncDir fsyncs a directory so entries created, renamed or removed in it
// are durable.
func SyncDir(dir *os.File) error {
	if err := dir.Sync(); err != nil {
		return fault.Wrap(fault.IO, err, "syncing a directory failed")
	}
	return nil
}
