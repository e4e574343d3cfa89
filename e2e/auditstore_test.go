package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/capkit/capkit/audit/pgstore"
	"github.com/capkit/capkit/internal/testkit/pgtest"
)

// TestAuditStoreManyProcesses: capkit processes writing to one PostgreSQL
// audit store at once (two servers over stdio and a run of capkit call
// invocations) lose and duplicate nothing: the store holds each call
// once, every stream's chain verifies, and no argument value is in it.
func TestAuditStoreManyProcesses(t *testing.T) {
	url := pgtest.URL(t)
	dir := tree(t)
	cfg := filepath.Join(dir, "capkit.toml")
	writePrivate(t, cfg, fmt.Sprintf("audit_store = %q\naudit_spool = %q\n[[root]]\npath = \"rw\"\n", url, filepath.Join(dir, "spool")))
	const secret = "SECRET_ARGUMENT_5771"
	const servers, each, clis = 2, 60, 12
	var wg sync.WaitGroup
	for s := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := stdioClient(t, "--config", cfg)
			for i := range each {
				c.call(t, "read_file", map[string]any{"path": fmt.Sprintf("%s-%d-%d.txt", secret, s, i)})
			}
			c.cs.Close()
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range clis / 2 {
				run(t, "", "--config", cfg, "call", "read_file", `{"path":"`+secret+`.txt"}`)
			}
		}()
	}
	wg.Wait()
	want := servers*each + clis
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var rows, distinct, streams, leaks int
	deadline := time.Now().Add(hangGuard)
	for {
		err = conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT (event::jsonb->>'session') || '/' || (event::jsonb->>'request')),
			count(DISTINCT stream), count(*) FILTER (WHERE event LIKE '%`+secret+`%') FROM capkit_audit WHERE msg = 'call'`).Scan(&rows, &distinct, &streams, &leaks)
		if err != nil {
			t.Fatal(err)
		}
		if rows >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rows != want || distinct != want || streams != servers+clis || leaks != 0 {
		t.Fatalf("store: %d rows, %d distinct calls, %d streams, %d holding an argument; want %d calls of %d streams",
			rows, distinct, streams, leaks, want, servers+clis)
	}
	r, err := pgstore.OpenReader(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		st, _ := r.Chain(ctx)
		if st.Broken != "" {
			t.Fatal(st.Broken)
		}
		if st.Records == uint64(want) && st.Missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chain %+v", st)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if files, _ := filepath.Glob(filepath.Join(dir, "spool", "*")); len(files) != 0 {
		t.Errorf("spools left with the store up: %v", files)
	}
}
