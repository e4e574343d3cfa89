package textarchive

import (
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/sqlitefault"
)

// dbFault classifies a driver error; what names the operation. Only the
// archive names its database, so one that is not SQLite's is damage.
func dbFault(err error, what string) error {
	if sqlitefault.NotADatabase(err) {
		return fault.Wrap(fault.Integrity, err, "%s: the archive's database is not a SQLite database (capkit archive audit names what is damaged)", what)
	}
	return sqlitefault.Fault(err, "the archive's database", what)
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
