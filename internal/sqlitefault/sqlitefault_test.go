package sqlitefault

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/capkit/capkit/fault"
)

// sqliteErr runs query on a database at path and returns SQLite's error.
func sqliteErr(t *testing.T, path, query string) error {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, err = db.Exec(query)
	if err == nil {
		t.Fatalf("%s on %s succeeded", query, path)
	}
	return err
}

func TestFault(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	os.WriteFile(garbage, []byte(strings.Repeat("not a database ", 100)), 0o600)
	held := filepath.Join(dir, "held.db")
	holder, err := sql.Open("sqlite", held)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	holder.SetMaxOpenConns(1)
	if _, err := holder.Exec(`CREATE TABLE t (x); BEGIN EXCLUSIVE; INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		err  error
		code fault.Code
		busy bool
		says string
	}{
		{"not a database", sqliteErr(t, garbage, `SELECT * FROM sqlite_master`), fault.InvalidInput, false, "the index is not a SQLite database"},
		{"cannot open", sqliteErr(t, filepath.Join(dir, "missing", "x.db"), `CREATE TABLE t (x)`), fault.NotFound, false, "the index cannot be opened"},
		{"busy", sqliteErr(t, held+"?_pragma=busy_timeout(0)", `INSERT INTO t VALUES (2)`), fault.Unavailable, true, "the index is busy with another writer; retry"},
		{"not SQLite's", errors.New("disk on fire"), fault.IO, false, "adding failed"},
		{"cancelled", context.Canceled, fault.As(context.Canceled).Code, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := fault.As(Fault(c.err, "the index", "adding"))
			if got.Code != c.code || !strings.Contains(got.Message, c.says) {
				t.Errorf("Fault = %s %q, want %s saying %q", got.Code, got.Message, c.code, c.says)
			}
			if Busy(c.err) != c.busy || Busy(Fault(c.err, "the index", "adding")) != c.busy {
				t.Errorf("Busy = %v, want %v (before and after Fault)", Busy(c.err), c.busy)
			}
			if NotADatabase(c.err) != (c.name == "not a database") {
				t.Errorf("NotADatabase = %v", NotADatabase(c.err))
			}
			if c.busy && got.RetryAfter != RetryAfter {
				t.Errorf("RetryAfter = %v", got.RetryAfter)
			}
		})
	}
	passed := fault.New(fault.Conflict, "already")
	if Fault(passed, "the index", "adding") != passed || Fault(nil, "x", "y") != nil {
		t.Error("a fault or nil did not pass unchanged")
	}
}
