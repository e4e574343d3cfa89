package sqlitepin

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/scope"
)

// pinned pins name in the root, a fresh directory holding .git and ix/.
func pinned(t *testing.T, name string) (string, *scope.Pinned) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{".git", "ix"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tg, err := scope.In([]string{root}, capability.Protected{}).Resolve(name)
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	p, err := tg.Pin("-wal", "-shm", "-journal")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return root, p
}

// openDB opens the database at path in WAL mode and writes to it.
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t(x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestSQLiteKeepsThePinnedPath: SQLite's name for the database is the
// pinned directory's descriptor path, not the host path it would resolve
// the descriptor's link to (without the lstat it is the host path), so
// every file it opens later goes through the descriptor.
func TestSQLiteKeepsThePinnedPath(t *testing.T) {
	root, p := pinned(t, "ix/db")
	path, err := Path(p)
	if err != nil {
		t.Fatal(err)
	}
	db := openDB(t, path)
	var seq int
	var name, file string
	if err := db.QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(file, "/proc/") || !strings.Contains(file, "/fd/") || strings.HasPrefix(file, root) {
		t.Errorf("SQLite names the database %q; want the descriptor path under /proc, not the host path under %s", file, root)
	}
	if _, err := os.Stat(filepath.Join(root, "ix", "db-wal")); err != nil {
		t.Errorf("the -wal file is not beside the database: %v", err)
	}
}

// TestSwappedDirectory renames the pinned directory away and puts a
// symbolic link to .git at its name, before SQLite opens the database and
// again while it is open: the database and its -wal and -shm stay in the
// pinned directory, with every new connection, and nothing appears in
// .git.
func TestSwappedDirectory(t *testing.T) {
	root, p := pinned(t, "ix/db")
	path, err := Path(p)
	if err != nil {
		t.Fatal(err)
	}
	cur := "ix"
	swap := func(away string) {
		if err := os.Rename(filepath.Join(root, cur), filepath.Join(root, away)); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(root, "ix"))
		if err := os.Symlink(".git", filepath.Join(root, "ix")); err != nil {
			t.Fatal(err)
		}
		cur = away
	}
	swap("ix-1")
	db := openDB(t, path)
	swap("ix-2")
	ctx := context.Background()
	conns := make([]*sql.Conn, 3)
	for i := range conns {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, `INSERT INTO t VALUES (2)`); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	for _, f := range []string{"db", "db-wal", "db-shm"} {
		if _, err := os.Stat(filepath.Join(root, "ix-2", f)); err != nil {
			t.Errorf("%s is not in the pinned directory: %v", f, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(root, ".git")); len(entries) > 0 {
		t.Errorf(".git holds %v", entries)
	}
}

func TestOwnDir(t *testing.T) {
	d, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	f, err := os.CreateTemp(t.TempDir(), "f")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	install()
	dir, file := int(d.Fd()), int(f.Fd())
	for p, want := range map[string]bool{
		"/proc/self/fd/" + itoa(dir):               true,
		"/proc/" + selfPID + "/fd/" + itoa(dir):    true,
		"/proc/self/fd/" + itoa(file):              false, // not a directory
		"/proc/1/fd/" + itoa(dir):                  selfPID == "1",
		"/proc/self/fd/0" + itoa(dir):              false,
		"/proc/self/fd/" + itoa(dir) + "/x":        false,
		"/proc/self/fdinfo/" + itoa(dir):           false,
		"/tmp/proc/self/fd/" + itoa(dir):           false,
		"/proc/self/fd/-1":                         false,
		"/proc/self/fd/99999999999999999999999999": false,
	} {
		if _, got := ownDir(p); got != want {
			t.Errorf("ownDir(%q) = %v, want %v", p, got, want)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
