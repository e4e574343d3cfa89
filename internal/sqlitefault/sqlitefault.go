// Package sqlitefault turns an error from modernc.org/sqlite into a fault
// a person can act on: the one classification the indexes
// (search/lexindex, search/semindex), the archive (archive/textarchive)
// and the budget store (net/budget) share, each naming its database in
// its own words.
//
// What it does not do: retry. Busy reports a busy or locked database so
// that a caller's own loop can wait and try again.
package sqlitefault

import (
	"context"
	"errors"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/capkit/capkit/fault"
)

// RetryAfter is the wait a busy database's fault suggests.
const RetryAfter = time.Second

// Fault classifies err, from the database db names in messages ("the
// index", "the archive"), during what ("adding the documents"). A fault
// passes unchanged, a cancelled or expired context is its own fault, an
// error that is not SQLite's is io, and nil stays nil. A file that is not
// a SQLite database is invalid_input: the caller named the wrong file (a
// caller whose database only capkit names calls it damage: NotADatabase).
func Fault(err error, db, what string) error {
	if err == nil {
		return nil
	}
	var fe *fault.Error
	if errors.As(err, &fe) {
		return fe
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fault.As(err)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return fault.Wrap(fault.IO, err, "%s failed", what)
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fault.Wrap(fault.Unavailable, err, "%s: %s is busy with another writer; retry", what, db).RetryIn(RetryAfter)
	case sqlite3.SQLITE_CANTOPEN:
		return fault.Wrap(fault.NotFound, err, "%s: %s cannot be opened (does its directory exist?)", what, db)
	case sqlite3.SQLITE_NOTADB:
		return fault.Wrap(fault.InvalidInput, err, "%s: %s is not a SQLite database", what, db)
	case sqlite3.SQLITE_CORRUPT:
		return fault.Wrap(fault.Integrity, err, "%s: %s is corrupt", what, db)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
		return fault.Wrap(fault.Denied, err, "%s: %s cannot be written", what, db)
	case sqlite3.SQLITE_FULL:
		return fault.Wrap(fault.Limit, err, "%s: the disk is full", what)
	case sqlite3.SQLITE_INTERRUPT:
		return fault.Wrap(fault.Unavailable, err, "%s: interrupted", what)
	}
	return fault.Wrap(fault.IO, err, "%s failed", what)
}

// Busy reports whether err, or the fault Fault made of it, is SQLite's
// busy or locked.
func Busy(err error) bool {
	c := code(err)
	return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
}

// NotADatabase reports whether err, or the fault Fault made of it, is
// SQLite's finding that the file is not a database.
func NotADatabase(err error) bool { return code(err) == sqlite3.SQLITE_NOTADB }

// code is SQLite's primary result code in err's chain, or 0.
func code(err error) int {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return 0
	}
	return se.Code() & 0xff
}
