package textarchive

import (
	"context"
	"errors"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/capkit/capkit/fault"
)

// dbFault classifies a driver error; what names the operation.
func dbFault(err error, what string) error {
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
		return &fault.Error{Code: fault.Unavailable, Message: what + ": the archive is busy with another writer; retry", RetryAfter: time.Second, Err: err}
	case sqlite3.SQLITE_CANTOPEN:
		return fault.Wrap(fault.NotFound, err, "%s: the archive's database cannot be opened", what)
	case sqlite3.SQLITE_NOTADB:
		return fault.Wrap(fault.Integrity, err, "%s: the archive's database is not a SQLite database", what)
	case sqlite3.SQLITE_CORRUPT:
		return fault.Wrap(fault.Integrity, err, "%s: the archive's database is corrupt (capkit archive audit names what)", what)
	case sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM, sqlite3.SQLITE_AUTH:
		return fault.Wrap(fault.Denied, err, "%s: the archive cannot be written", what)
	case sqlite3.SQLITE_FULL:
		return fault.Wrap(fault.Limit, err, "%s: the disk is full", what)
	case sqlite3.SQLITE_INTERRUPT:
		return fault.Wrap(fault.Unavailable, err, "%s: interrupted", what)
	}
	return fault.Wrap(fault.IO, err, "%s failed", what)
}

func isBusy(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		c := se.Code() & 0xff
		return c == sqlite3.SQLITE_BUSY || c == sqlite3.SQLITE_LOCKED
	}
	return false
}

// stepHook, when set (by this package's tests, in a child process), is
// called at each named step of an operation that changes the archive or
// publishes a file, so a test can kill the process exactly there. Nil in
// every other use.
var stepHook func(step string)

func step(name string) {
	if stepHook != nil {
		stepHook(name)
	}
}
