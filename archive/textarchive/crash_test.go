package textarchive

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/net/budget"
)

// The crash tests re-run this test binary as a child that performs one
// operation on an archive and is killed (SIGKILL, by itself) at a named
// step of it: crashEnv names the operation, crashEnv_STEP the step and
// crashEnv_DIR the archive root (or the operation's other paths).
const crashEnv = "CAPKIT_TEXTARCHIVE_CRASH"

// crashOps are the operations a child can run, by name, each with its
// arguments from the environment.
var crashOps = map[string]func(ctx context.Context, env func(string) string) error{
	"add-text": func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.AddText(ctx, TextRequest{Collection: "c", Item: "item", Request: "crash", Document: doc("the second text", "of two parts")})
		return err
	},
	"add-file": func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.AddFile(ctx, FileRequest{Collection: "c", Item: "item", Request: "crash", Name: "f.bin", MediaType: "application/octet-stream"},
			strings.NewReader(strings.Repeat("file bytes ", 4096)))
		return err
	},
}

func init() {
	crashOps["backup"] = func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.Backup(ctx, env("FILE"), nil)
		return err
	}
	crashOps["restore"] = func(ctx context.Context, env func(string) string) error {
		_, err := Restore(ctx, env("FILE"), env("DEST"), nil)
		return err
	}
	crashOps["migrate"] = func(ctx context.Context, env func(string) string) error {
		_, err := Migrate(ctx, env("DIR"))
		return err
	}
	crashOps["fetch"] = func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		p, err := LoadSourcePolicy(ctx, env("POLICY"))
		if err != nil {
			return err
		}
		b, err := budget.Open(ctx, env("BUDGET"), p.Budget(), nil)
		if err != nil {
			return err
		}
		defer b.Close()
		src := &Source{Policy: p, Budget: b, Resolver: nettest.ResolverAt(env("DNS"))}
		_, err = a.Fetch(ctx, src, FetchRequest{URL: env("URL"), Collection: "c", Item: "page", Request: "crash", Task: "test"})
		return err
	}
}

// TestCrashChild is the child's body; it does nothing in a normal run.
func TestCrashChild(t *testing.T) {
	op := os.Getenv(crashEnv)
	if op == "" {
		t.Skip("runs only as a child of the crash tests")
	}
	at := os.Getenv(crashEnv + "_STEP")
	if os.Getenv(crashEnv+"_SCHEMA2") != "" {
		withSchema2(t)
	}
	// The kill comes at the step's _STEP_N-th time (the first by default).
	nth, _ := strconv.Atoi(os.Getenv(crashEnv + "_STEP_N"))
	stepHook = func(s string) {
		if s == at {
			if nth--; nth <= 0 {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				time.Sleep(time.Minute)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := crashOps[op](ctx, func(k string) string { return os.Getenv(crashEnv + "_" + k) })
	if err != nil {
		fmt.Println("error:", fault.CodeOf(err), err)
		os.Exit(3)
	}
	fmt.Println("done")
}

// crashAt runs op in a child killed at step and fails unless the kill
// came at that step.
func crashAt(t *testing.T, op, at string, env ...string) {
	t.Helper()
	env = append(env, crashEnv+"="+op, crashEnv+"_STEP="+at)
	c := testkit.StartChild(t, "TestCrashChild", env...)
	var said []string
	for out := bufio.NewScanner(c.Stdout); out.Scan(); {
		said = append(said, out.Text())
	}
	if killed, err := c.Wait(); !killed {
		t.Fatalf("%s at %s: the child was not killed there (%v): %q", op, at, err, said)
	}
}

// auditClean fails unless a full audit of the archive at dir finds no
// problem; it returns the report.
func auditClean(t *testing.T, dir string) *AuditReport {
	t.Helper()
	a, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	r, err := a.Audit(context.Background(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Clean() {
		t.Fatalf("audit: %+v", r.Problems)
	}
	return r
}

func versionsOf(t *testing.T, dir, collection, item string) int64 {
	t.Helper()
	a := must(Open(context.Background(), dir))
	defer a.Close()
	return must(a.Versions(context.Background(), VersionsQuery{Collection: collection, Item: item})).Total
}

// TestCrashDuringAdd kills an add at each of its steps: the archive is as
// before the add (one version) or as after it (two), its audit is clean,
// and the add made again with the same request completes it exactly
// once.
func TestCrashDuringAdd(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	for _, c := range []struct {
		op    string
		steps []string
		after int // the first step after which the add is durable
	}{
		{"add-text", []string{"add.inserted", "add.committed"}, 1},
		{"add-file", []string{"stage.synced", "add.pending", "add.published", "add.inserted", "add.committed"}, 4},
	} {
		for i, at := range c.steps {
			t.Run(c.op+"/"+at, func(t *testing.T) {
				a := newArchive(t)
				dir := a.dir
				addText(t, a, "c", "item", "first", doc("the first text"))
				a.Close()
				crashAt(t, c.op, at, crashEnv+"_DIR="+dir)
				want := int64(1)
				if i >= c.after {
					want = 2
				}
				if got := versionsOf(t, dir, "c", "item"); got != want {
					t.Fatalf("%d versions after a crash at %s, want %d", got, at, want)
				}
				auditClean(t, dir)
				if err := crashOps[c.op](context.Background(), func(k string) string { return dir }); err != nil {
					t.Fatalf("the add made again: %v", err)
				}
				if got := versionsOf(t, dir, "c", "item"); got != 2 {
					t.Fatalf("%d versions after the add was made again", got)
				}
				auditClean(t, dir)
			})
		}
	}
}

// TestCrashDuringFetch kills a retained fetch at each of its steps: the
// archive is as before (no version) or after (one), its audit is clean,
// and the operation made again either returns the retained result without
// a GET (after the commit) or fetches again and discloses that the first
// GET may have reached the server.
func TestCrashDuringFetch(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	s := newSite(t)
	for _, c := range []struct {
		retention string
		steps     []string
	}{
		{RetainTextOnly, []string{"fetch.admitted", "fetch.fetched", "fetch.inserted", "fetch.committed"}},
		{RetainOriginal, []string{"fetch.fetched", "stage.synced", "fetch.pending", "fetch.published", "fetch.inserted", "fetch.committed"}},
	} {
		for _, at := range c.steps {
			t.Run(c.retention+"/"+at, func(t *testing.T) {
				a := newArchive(t)
				dir := a.dir
				a.Close()
				p, policyPath := s.policy(t, c.retention, "")
				budgetRoot := t.TempDir()
				gets := s.gets.Load()
				crashAt(t, "fetch", at, crashEnv+"_DIR="+dir, crashEnv+"_POLICY="+policyPath, crashEnv+"_BUDGET="+budgetRoot,
					crashEnv+"_DNS="+s.dns.Addr(), crashEnv+"_URL="+s.url("/page.html"))
				committed := at == "fetch.committed"
				if got := versionsIn(t, dir, "c"); got != map[bool]int64{false: 0, true: 1}[committed] {
					t.Fatalf("%d versions after a crash at %s", got, at)
				}
				auditClean(t, dir)
				b := must(budget.Open(context.Background(), budgetRoot, p.Budget(), nil))
				defer b.Close()
				a = must(Open(context.Background(), dir))
				defer a.Close()
				src := &Source{Policy: p, Budget: b, Resolver: s.dns.Resolver()}
				sent := s.gets.Load() - gets
				out := must(a.Fetch(context.Background(), src, FetchRequest{URL: s.url("/page.html"), Collection: "c", Item: "page", Request: "crash", Task: "test"}))
				switch {
				case committed && (!out.Repeated || out.Repeat != "" || s.gets.Load()-gets != sent):
					t.Fatalf("the repeat of a committed fetch: %+v, %d GETs", out, s.gets.Load()-gets)
				case !committed && (out.Repeated || out.Attempts != 2 || !strings.Contains(out.Repeat, "may have reached the server")):
					t.Fatalf("the repeat of an interrupted fetch: %+v", out)
				}
				if got := versionsIn(t, dir, "c"); got != 1 {
					t.Fatalf("%d versions after the fetch was made again", got)
				}
				auditClean(t, dir)
			})
		}
	}
}

func versionsIn(t *testing.T, dir, collection string) int64 {
	t.Helper()
	a := must(Open(context.Background(), dir))
	defer a.Close()
	l, err := a.List(context.Background(), ListQuery{Collection: collection})
	if fault.CodeOf(err) == fault.NotFound {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, it := range l.Items {
		n += it.Versions
	}
	return n
}

// TestCrashDuringBackupAndRestore kills a backup and a restore at each of
// their steps: the backup file, and the restored directory, exist whole
// (and verify, and audit clean) or not at all, and the archive backed up
// audits clean.
func TestCrashDuringBackupAndRestore(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	a := filled(t)
	dir := a.dir
	good, _ := backupOf(t, a)
	a.Close()
	for _, at := range []string{"backup.snapshot", "backup.verified", "backup.written", "backup.published"} {
		t.Run(at, func(t *testing.T) {
			out := t.TempDir()
			file := filepath.Join(out, "backup.tar")
			crashAt(t, "backup", at, crashEnv+"_DIR="+dir, crashEnv+"_FILE="+file)
			_, err := os.Stat(file)
			if published := err == nil; published != (at == "backup.published") {
				t.Fatalf("after a crash at %s the backup file exists: %v", at, published)
			}
			if err == nil {
				must(VerifyBackup(context.Background(), file, nil))
			}
			if names := visible(t, out); len(names) > 1 {
				t.Fatalf("after a crash at %s: %v", at, names)
			}
			auditClean(t, dir)
		})
	}
	for _, at := range []string{"restore.staged", "restore.verified", "restore.published"} {
		t.Run(at, func(t *testing.T) {
			dest := filepath.Join(t.TempDir(), "restored")
			crashAt(t, "restore", at, crashEnv+"_FILE="+good, crashEnv+"_DEST="+dest)
			_, err := os.Stat(dest)
			if published := err == nil; published != (at == "restore.published") {
				t.Fatalf("after a crash at %s the restored directory exists: %v", at, published)
			}
			if err == nil {
				auditClean(t, dest)
			} else {
				must(Restore(context.Background(), good, dest, nil))
				auditClean(t, dest)
			}
		})
	}
}

// visible lists dir's names but the staging namespace's.
func visible(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".capkit-tmp-") {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCrashDuringMigrate kills a migration to a schema 2 (the test's) at
// each step: the archive is at schema 1 or 2, never between, and once
// migrated (again if need be) audits clean with its original kept.
func TestCrashDuringMigrate(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	withSchema2(t)
	for _, at := range []string{"migrate.retained", "migrate.applied", "migrate.committed"} {
		t.Run(at, func(t *testing.T) {
			dir := rootFrom(t, filepath.Join("testdata", "schema-1.db"))
			crashAt(t, "migrate", at, crashEnv+"_DIR="+dir, crashEnv+"_SCHEMA2=1")
			_, err := Open(context.Background(), dir)
			migrated := err == nil
			if migrated != (at == "migrate.committed") {
				t.Fatalf("after a crash at %s the archive opens at schema 2: %v (%v)", at, migrated, err)
			}
			m := must(Migrate(context.Background(), dir))
			if m.To != 2 || migrated != (m.From == 2) {
				t.Fatalf("the migration made again: %+v", m)
			}
			if _, err := os.Stat(filepath.Join(dir, "retained", "archive-schema-1.db")); err != nil {
				t.Fatalf("the original is not kept: %v", err)
			}
			checkFixture(t, dir)
		})
	}
}

// chunked is an archive whose backup copies several chunks
// (copyChunkBytes): three files of one and a half chunks each.
func chunked(t *testing.T) string {
	t.Helper()
	a := filled(t)
	ctx := context.Background()
	for i := range 3 {
		data := bytes.Repeat([]byte{byte('a' + i)}, copyChunkBytes*3/2)
		must(a.AddFile(ctx, FileRequest{Collection: "big", Request: fmt.Sprint("big", i), Name: "big.bin", MediaType: "application/octet-stream"}, bytes.NewReader(data)))
	}
	a.Close()
	return a.dir
}

// checkBackupAfterCrash checks what a backup killed at some instant left
// in out: no backup file, or one that verifies against the archive at
// dir as it is; never anything else visible. The archive audits clean,
// and a backup made again to the same file succeeds and leaves only it.
func checkBackupAfterCrash(t *testing.T, dir, out string) {
	t.Helper()
	ctx := context.Background()
	file := filepath.Join(out, "backup.tar")
	names := visible(t, out)
	switch {
	case len(names) == 0:
	case len(names) == 1 && names[0] == "backup.tar":
		v, err := VerifyBackup(ctx, file, nil)
		if err != nil {
			t.Fatalf("the backup file the crash left does not verify: %v", err)
		}
		a := must(Open(ctx, dir))
		defer a.Close()
		if v.Manifest.Archive != a.ID() || v.Manifest.Blobs.Count != 5 {
			t.Fatalf("the backup the crash left: %+v", v.Manifest)
		}
		return
	default:
		t.Fatalf("the crash left %v", names)
	}
	auditClean(t, dir)
	a := must(Open(ctx, dir))
	defer a.Close()
	must(a.Backup(ctx, file, nil))
	if left := must(os.ReadDir(out)); len(left) != 1 {
		t.Fatalf("after the backup made again: %v", left)
	}
}

// TestCrashDuringBackupCopy kills a backup after each chunk it copies
// (the database's, then each blob's): no backup file is left, and one
// made again succeeds.
func TestCrashDuringBackupCopy(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	dir := chunked(t)
	// A chunk of the database, two of each of the three big blobs, one
	// of each small one.
	for n := 1; n <= 9; n++ {
		t.Run(fmt.Sprint("chunk ", n), func(t *testing.T) {
			out := t.TempDir()
			crashAt(t, "backup", "backup.chunk", crashEnv+"_STEP_N="+fmt.Sprint(n), crashEnv+"_DIR="+dir, crashEnv+"_FILE="+filepath.Join(out, "backup.tar"))
			if names := visible(t, out); len(names) != 0 {
				t.Fatalf("a backup killed while copying left %v", names)
			}
			checkBackupAfterCrash(t, dir, out)
		})
	}
}

// TestCrashBackupAnyInstant kills a backup from outside at instants
// spread over its run (however long it takes here): whatever instant the
// kill lands on, the backup file is absent or verifies.
func TestCrashBackupAnyInstant(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test")
	}
	dir := chunked(t)
	run := func(out string) *testkit.Child {
		return testkit.StartChild(t, "TestCrashChild", crashEnv+"=backup", crashEnv+"_DIR="+dir, crashEnv+"_FILE="+filepath.Join(out, "backup.tar"))
	}
	t0 := time.Now()
	c := run(t.TempDir())
	io.Copy(io.Discard, c.Stdout)
	if _, err := c.Wait(); err != nil {
		t.Fatalf("a whole backup: %v", err)
	}
	whole := time.Since(t0)
	const kills = 10
	for i := range kills {
		t.Run(fmt.Sprint("kill ", i), func(t *testing.T) {
			out := t.TempDir()
			c := run(out)
			time.Sleep(whole * time.Duration(i) / kills)
			c.Kill(t)
			io.Copy(io.Discard, c.Stdout)
			c.Wait()
			checkBackupAfterCrash(t, dir, out)
		})
	}
}
