// Command archivebench measures the text archive (archive/textarchive)
// beside what it is built on, in one run, as issue 22 asks:
//
//   - add: -docs documents of -words words each kept with AddText (one
//     request, one write transaction each, as capkit archive add-text and
//     archive_add make them), beside inserting the same texts into a bare
//     FTS5 table, one transaction per document, through the same driver
//     with the same pragmas (WAL, synchronous=FULL);
//   - search: a two-term query, -reps times, with Search (20 hits) beside
//     SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY
//     bm25(fts) LIMIT 20 on the bare table;
//   - backup and audit: -gib GiB of files kept with AddFile (128 MiB each),
//     then Backup beside tar -cf of the same root (and beside tar -cf
//     followed by sync FILE, since a backup is synced before it is
//     published and tar's output is not), and a full Audit beside
//     sha256sum of the blob files (both after the files were read once, so
//     the page cache holds what it can for each alike).
//
// It prints one line per figure: the operation, capkit's seconds, the
// other's, and the ratio the issue states a goal for (throughput of
// capkit / the other's for add, backup and audit; the other's time /
// capkit's for search).
//
//	archivebench -dir /tmp/ab -docs 10000 -gib 2
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"syscall"
	"time"

	_ "modernc.org/sqlite"

	"github.com/capkit/capkit/archive/textarchive"
	"github.com/capkit/capkit/limits"
)

func main() {
	dir := flag.String("dir", "", "an empty work directory (absolute)")
	docs := flag.Int("docs", 10_000, "documents added")
	words := flag.Int("words", 300, "words a document")
	reps := flag.Int("reps", 20, "measured searches")
	gib := flag.Float64("gib", 2, "GiB of files for backup and audit (0: skip)")
	rounds := flag.Int("rounds", 1, "backups (each beside a tar) and audits (each beside a sha256sum), alternating")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the adds to this file")
	backupProfile := flag.String("backupprofile", "", "write a CPU profile of the backups to this file")
	flag.Parse()
	if *dir == "" {
		fail(fmt.Errorf("-dir is required"))
	}
	ctx := context.Background()
	texts := corpus(*docs, *words)
	arch := filepath.Join(*dir, "archive")
	fail(textarchive.Init(ctx, arch))
	a, err := textarchive.Open(ctx, arch)
	fail(err)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(*dir, "bare.db")+"?_pragma=journal_mode(wal)&_pragma=synchronous(full)")
	fail(err)
	db.SetMaxOpenConns(1)
	_, err = db.Exec(`CREATE VIRTUAL TABLE fts USING fts5(body)`)
	fail(err)

	if *profile != "" {
		f, err := os.Create(*profile)
		fail(err)
		fail(pprof.StartCPUProfile(f))
	}
	capkit := timed(func() {
		for i, s := range texts {
			_, err := a.AddText(ctx, textarchive.TextRequest{Collection: "bench", Item: fmt.Sprint("d", i), Request: fmt.Sprint("r", i),
				Document: textarchive.Document{Parts: []textarchive.Part{{Text: s}}}})
			fail(err)
		}
	})
	pprof.StopCPUProfile()
	bare := timed(func() {
		for i, s := range texts {
			tx, err := db.Begin()
			fail(err)
			_, err = tx.Exec(`INSERT INTO fts(rowid, body) VALUES (?, ?)`, i+1, s)
			fail(err)
			fail(tx.Commit())
		}
	})
	report(fmt.Sprintf("add %d documents of %d words, a transaction each", *docs, *words), capkit, bare, "throughput", bare/capkit)

	query := "w17 w40"
	var hits int
	capkit = median(*reps, func() {
		r, err := a.Search(ctx, textarchive.SearchQuery{Text: query, Limit: 20})
		fail(err)
		hits = len(r.Hits)
	})
	var bareHits int
	bare = median(*reps, func() {
		rows, err := db.Query(`SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts) LIMIT 20`, query)
		fail(err)
		bareHits = 0
		for rows.Next() {
			bareHits++
		}
		fail(rows.Err())
		rows.Close()
	})
	if hits != bareHits {
		fail(fmt.Errorf("search: %d hits, bare FTS5 %d", hits, bareHits))
	}
	report(fmt.Sprintf("search %q, 20 hits of %d documents (median of %d)", query, *docs, *reps), capkit, bare, "time", bare/capkit)
	db.Close()
	if *gib > 0 {
		files(ctx, a, arch, *dir, int64(*gib*float64(limits.GiB)), *rounds, *backupProfile)
	}
	fail(a.Close())
}

// corpus is n documents of w words drawn from a Zipf-like vocabulary of
// 50,000 ("w0" the most frequent), the same on every run.
func corpus(n, w int) []string {
	rng := rand.New(rand.NewPCG(22, 22))
	z := rand.NewZipf(rng, 1.1, 1, 49_999)
	out := make([]string, n)
	var b strings.Builder
	for i := range out {
		b.Reset()
		for j := range w {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprint(&b, "w", z.Uint64())
		}
		out[i] = b.String()
	}
	return out
}

// files keeps total bytes of random files and times backup and audit
// beside tar and sha256sum, rounds times each.
func files(ctx context.Context, a *textarchive.Archive, arch, dir string, total int64, rounds int, profile string) {
	const size = limits.ArchiveMaxFileBytes
	rng := rand.New(rand.NewPCG(7, 7))
	for i := int64(0); i*size < total; i++ {
		n := min(size, total-i*size)
		_, err := a.AddFile(ctx, textarchive.FileRequest{Collection: "files", Request: fmt.Sprint("f", i), Name: fmt.Sprintf("f%03d.bin", i), MediaType: "application/octet-stream"},
			io.LimitReader(randReader{rng}, n))
		fail(err)
	}
	blobs, err := filepath.Glob(filepath.Join(arch, "blobs", "*", "*"))
	fail(err)
	what := fmt.Sprintf("%.2f GiB in %d files", float64(total)/float64(limits.GiB), len(blobs))
	backups(ctx, a, arch, filepath.Join(dir, "backup.tar"), what, blobs, rounds, profile)
	for range rounds {
		warm(blobs)
		capkit := timedCPU(func() {
			r, err := a.Audit(ctx, textarchive.AuditOptions{})
			fail(err)
			if !r.Clean() {
				fail(fmt.Errorf("audit: %+v", r.Problems))
			}
		})
		bare := timedCPU(func() { run("sha256sum", blobs...) })
		reportCPU("full audit of "+what, capkit, bare)
	}
}

// backups times rounds backups to out beside as many tar -cf, each
// after the blobs were read once, with a CPU profile of them when
// profile names a file.
func backups(ctx context.Context, a *textarchive.Archive, arch, out, what string, blobs []string, rounds int, profile string) {
	if profile != "" {
		f, err := os.Create(profile)
		fail(err)
		defer f.Close()
		fail(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	for range rounds {
		warm(blobs)
		capkit := timedCPU(func() {
			_, err := a.Backup(ctx, out, nil)
			fail(err)
		})
		fail(os.Remove(out))
		bare := timedCPU(func() { run("tar", "-cf", out, "-C", arch, ".") })
		fail(os.Remove(out))
		reportCPU("backup of "+what, capkit, bare)
		// A backup is durable before it is published (synced, then
		// renamed); tar leaves its output in the page cache. The same
		// tar with its output synced is the durable side.
		warm(blobs)
		syscall.Sync()
		durable := timedCPU(func() {
			run("tar", "-cf", out, "-C", arch, ".")
			run("sync", out)
		})
		fail(os.Remove(out))
		reportCPU("backup of "+what+" beside tar and a sync of its output", capkit, durable)
	}
}

// spent is a measured step's wall and CPU (user and system) seconds.
type spent struct{ wall, cpu float64 }

// timedCPU times f, counting the CPU of this process and of the
// commands it waited for.
func timedCPU(f func()) spent {
	c0 := cpuSeconds()
	t0 := time.Now()
	f()
	return spent{time.Since(t0).Seconds(), cpuSeconds() - c0}
}

func cpuSeconds() float64 {
	var s float64
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var u syscall.Rusage
		fail(syscall.Getrusage(who, &u))
		s += float64(u.Utime.Nano()+u.Stime.Nano()) / 1e9
	}
	return s
}

// reportCPU prints a throughput ratio (other's time / capkit's) with
// each side's CPU seconds.
func reportCPU(what string, capkit, other spent) {
	fmt.Printf("%s: capkit %.4f s (CPU %.2f s), bare %.4f s (CPU %.2f s), throughput ratio %.2f\n", what, capkit.wall, capkit.cpu, other.wall, other.cpu, other.wall/capkit.wall)
}

type randReader struct{ r *rand.Rand }

func (r randReader) Read(p []byte) (int, error) {
	for i := 0; i < len(p); i += 8 {
		v := r.r.Uint64()
		for k := 0; k < 8 && i+k < len(p); k++ {
			p[i+k] = byte(v >> (8 * k))
		}
	}
	return len(p), nil
}

// warm reads every file once.
func warm(paths []string) {
	for _, p := range paths {
		f, err := os.Open(p)
		fail(err)
		_, err = io.Copy(io.Discard, f)
		f.Close()
		fail(err)
	}
}

func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	fail(cmd.Run())
}

func timed(f func()) float64 {
	t0 := time.Now()
	f()
	return time.Since(t0).Seconds()
}

func median(n int, f func()) float64 {
	f() // warm
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = timed(f)
	}
	slices.Sort(ts)
	return ts[n/2]
}

func report(what string, capkit, other float64, ratio string, r float64) {
	fmt.Printf("%s: capkit %.4f s, bare %.4f s, %s ratio %.2f\n", what, capkit, other, ratio, r)
}

func fail(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "archivebench:", err)
		os.Exit(1)
	}
}
