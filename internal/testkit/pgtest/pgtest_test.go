package pgtest

import (
	"context"
	"database/sql"
	"os"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

func TestFreshDatabases(t *testing.T) {
	a, b := URL(t), URL(t)
	if a == b {
		t.Fatal("two tests got one database")
	}
	db, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var one int
	if err := db.QueryRowContext(context.Background(), "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Fatal(one, err)
	}
}
