package textarchive

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// TestHostileText: text with NUL bytes, control characters and a byte
// order mark is kept exactly and cited back exactly; labels are held to
// their bounds at the edge.
func TestHostileText(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	text := "\ufeffnul\x00inside\x00\x00 and \x1b[2J escape\r\n\x7f end"
	v := addText(t, a, "c", "nul", "r1", Document{Parts: []Part{{Text: text}}})
	c := cite(t, a, v.Version, 0, 0, int64(len([]rune(text))))
	if c.Citation.Quote.Exact != text || c.Citation.PartSHA256 != sha256String(text) {
		t.Fatalf("the text came back as %q", c.Citation.Quote.Exact)
	}
	if _, err := a.Check(ctx, &c.Citation); err != nil {
		t.Fatalf("the citation of a text with NULs does not check: %v", err)
	}
	hits := must(a.Search(ctx, SearchQuery{Text: "inside"}))
	if len(hits.Hits) != 1 {
		t.Fatalf("a term after a NUL is not found: %+v", hits)
	}
	for _, c := range []struct {
		what string
		max  int
		set  func(d *Document, s string)
	}{
		{"title", limits.ArchiveMaxTitleBytes, func(d *Document, s string) { d.Title = s }},
		{"page", limits.ArchiveMaxLabelBytes, func(d *Document, s string) { d.Parts[0].Page = Page(s) }},
		{"method", limits.ArchiveMaxLabelBytes, func(d *Document, s string) { d.Parts[0].Method = s }},
		{"warning", limits.ArchiveMaxWarningBytes, func(d *Document, s string) { d.Parts[0].Warnings = []string{s} }},
	} {
		d := doc("x")
		c.set(&d, strings.Repeat("é", c.max/2))
		addText(t, a, "edges", c.what, c.what, d)
		c.set(&d, strings.Repeat("é", c.max/2)+"e")
		_, err := a.AddText(ctx, TextRequest{Collection: "edges", Item: c.what + "+1", Request: c.what + "+1", Document: d})
		if fault.CodeOf(err) != fault.Limit {
			t.Errorf("a %s of %d bytes: %v", c.what, c.max+1, err)
		}
		c.set(&d, "a\x00b")
		_, err = a.AddText(ctx, TextRequest{Collection: "edges", Item: c.what + "-nul", Request: c.what + "-nul", Document: d})
		if fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("a NUL in a %s: %v", c.what, err)
		}
	}
	for _, name := range []string{"a\x00b", "\xff", "a\u0085b"} {
		_, err := a.AddText(ctx, TextRequest{Collection: "c", Item: name, Request: "r-" + name, Document: doc("x")})
		if fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("the item %q: %v", name, err)
		}
	}
	auditClean(t, a.dir)
}

// TestListOffsetEdge: an offset up to limits.ArchiveMaxListOffset is a
// window (empty past the end), one more is refused.
func TestListOffsetEdge(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	addText(t, a, "c", "i", "r", doc("x"))
	l := must(a.List(ctx, ListQuery{Collection: "c", Offset: limits.ArchiveMaxListOffset}))
	if len(l.Items) != 0 || l.Total != 1 {
		t.Fatalf("the last offset: %+v", l)
	}
	_, err := a.List(ctx, ListQuery{Collection: "c", Offset: limits.ArchiveMaxListOffset + 1})
	wantCode(t, err, fault.Limit)
	_, err = a.Versions(ctx, VersionsQuery{Collection: "c", Item: "i", Offset: limits.ArchiveMaxListOffset + 1})
	wantCode(t, err, fault.Limit)
}

// TestConcurrentSameRequest: many writers, on one handle and on handles
// of their own (each its own database connection, as separate processes
// have), send one request identity at once. With the same content they
// all get the one version; with different contents exactly one wins and
// every other is a conflict naming it; never two versions.
func TestConcurrentSameRequest(t *testing.T) {
	a := newArchive(t)
	ctx := context.Background()
	const writers = 8
	handles := []*Archive{a}
	for range 3 {
		b := must(Open(ctx, a.dir))
		t.Cleanup(func() { b.Close() })
		handles = append(handles, b)
	}
	run := func(content func(i int) string) ([]*Added, []error) {
		outs, errs := make([]*Added, writers), make([]error, writers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				h := handles[i%len(handles)]
				outs[i], errs[i] = h.AddText(ctx, TextRequest{Collection: "c", Item: "same", Request: "r-" + content(0)[:4], Document: doc(content(i))})
			}()
		}
		close(start)
		wg.Wait()
		return outs, errs
	}
	outs, errs := run(func(int) string { return "same content" })
	for i := range writers {
		if errs[i] != nil || outs[i].Version != outs[0].Version {
			t.Fatalf("writer %d with the same content: %+v %v", i, outs[i], errs[i])
		}
	}
	outs, errs = run(func(i int) string { return fmt.Sprintf("diff content %d", i) })
	won := ""
	for i := range writers {
		switch {
		case errs[i] == nil && won == "":
			won = outs[i].Version
		case errs[i] == nil:
			t.Fatalf("two writers of different content under one request both won: %s and %s", won, outs[i].Version)
		case fault.CodeOf(errs[i]) != fault.Conflict:
			t.Fatalf("writer %d: %v, want conflict", i, errs[i])
		}
	}
	if won == "" {
		t.Fatal("no writer won")
	}
	if n := versionsOf(t, a.dir, "c", "same"); n != 2 {
		t.Fatalf("%d versions after two rounds of one request each", n)
	}
	auditClean(t, a.dir)
}

// TestHostileRootContents: what a hostile local process puts in the
// archive root is refused or reported, never followed, and no call
// hangs on it.
func TestHostileRootContents(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("outside the archive"), 0o600); err != nil {
		t.Fatal(err)
	}
	fileVersion := func(t *testing.T) (*Archive, *Added) {
		a := newArchive(t)
		out, err := a.AddFile(ctx, FileRequest{Collection: "c", Request: "r", Name: "f.bin", MediaType: "application/octet-stream"}, strings.NewReader("file bytes"))
		if err != nil {
			t.Fatal(err)
		}
		return a, out
	}
	t.Run("blob swapped for a symlink", func(t *testing.T) {
		a, out := fileVersion(t)
		p := filepath.Join(a.dir, filepath.FromSlash(blobPath(out.BlobSHA256)))
		replace(t, p, func() error { return os.Symlink(secret, p) })
		wantProblem(t, a, "blob "+out.BlobSHA256[:12])
		_, err := a.Backup(ctx, filepath.Join(t.TempDir(), "b.tar"), nil)
		if err == nil {
			t.Fatal("a backup followed a symlinked blob")
		}
	})
	t.Run("blob swapped for a FIFO", func(t *testing.T) {
		a, out := fileVersion(t)
		p := filepath.Join(a.dir, filepath.FromSlash(blobPath(out.BlobSHA256)))
		replace(t, p, func() error { return syscall.Mkfifo(p, 0o600) })
		done := make(chan struct{})
		go func() {
			defer close(done)
			wantProblem(t, a, "blob "+out.BlobSHA256[:12])
		}()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Fatal("audit blocks on a FIFO in place of a blob")
		}
	})
	t.Run("blob directory swapped for a symlink", func(t *testing.T) {
		a, out := fileVersion(t)
		sub := filepath.Join(a.dir, blobsDir, out.BlobSHA256[:2])
		moved := filepath.Join(outside, "moved")
		if err := os.Rename(sub, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, sub); err != nil {
			t.Fatal(err)
		}
		wantProblem(t, a, "blob "+out.BlobSHA256[:12])
	})
	t.Run("blobs swapped for a symlink", func(t *testing.T) {
		a, out := fileVersion(t)
		blobs := filepath.Join(a.dir, blobsDir)
		moved := filepath.Join(t.TempDir(), "blobs")
		if err := os.Rename(blobs, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, blobs); err != nil {
			t.Fatal(err)
		}
		r, err := a.Audit(ctx, AuditOptions{})
		if err == nil && len(r.Problems) == 0 {
			t.Fatalf("a symlinked blob directory passes the audit: %+v", r)
		}
		_, err = a.AddFile(ctx, FileRequest{Collection: "c", Request: "r2", Name: "g.bin", MediaType: "application/octet-stream"}, strings.NewReader("other bytes"))
		if err == nil {
			t.Fatal("a blob was published through a symlinked blob directory")
		}
		if _, err := os.Stat(filepath.Join(moved, out.BlobSHA256[:2], out.BlobSHA256)); err != nil {
			t.Fatalf("the original blob: %v", err)
		}
	})
	t.Run("sidecar is a FIFO", func(t *testing.T) {
		a := newArchive(t)
		dir := a.dir
		a.Close()
		os.Remove(filepath.Join(dir, dbName+"-journal"))
		if err := syscall.Mkfifo(filepath.Join(dir, dbName+"-journal"), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Open(ctx, dir)
		if fault.CodeOf(err) != fault.InvalidInput && fault.CodeOf(err) != fault.Denied {
			t.Fatalf("a FIFO beside the database: %v", err)
		}
	})
	t.Run("foreign files and staging leftovers", func(t *testing.T) {
		a := newArchive(t)
		addText(t, a, "c", "i", "r", doc("text"))
		for _, p := range []string{"foreign.txt", blobsDir + "/zz", blobsDir + "/.capkit-tmp-archive-dead"} {
			if err := os.WriteFile(filepath.Join(a.dir, filepath.FromSlash(p)), []byte("x"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(secret, filepath.Join(a.dir, "link")); err != nil {
			t.Fatal(err)
		}
		r := must(a.Audit(ctx, AuditOptions{}))
		for _, p := range r.Problems {
			if strings.Contains(p.Problem, "outside the archive") {
				t.Fatalf("the audit read through a symlink: %+v", p)
			}
		}
		prev := must(a.CleanupPreview(ctx))
		for _, it := range prev.Items {
			if strings.Contains(it.Name, "foreign") || strings.Contains(it.Name, "link") || strings.HasSuffix(it.Name, "/zz") {
				t.Fatalf("cleanup would remove what the archive did not make: %+v", it)
			}
		}
		if _, err := os.Lstat(secret); err != nil {
			t.Fatal(err)
		}
	})
}

// replace removes p and makes something else at its name.
func replace(t *testing.T, p string, mk func() error) {
	t.Helper()
	if err := os.Chmod(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := mk(); err != nil {
		t.Fatal(err)
	}
}

// wantProblem runs a full audit and fails unless a problem names an
// object starting with prefix.
func wantProblem(t *testing.T, a *Archive, prefix string) {
	t.Helper()
	r, err := a.Audit(context.Background(), AuditOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range r.Problems {
		if strings.HasPrefix(p.Object, prefix) {
			return
		}
	}
	t.Fatalf("no problem names %s: %+v", prefix, r.Problems)
}

// TestLoadSourcePolicyHostile: the policy file is a host target: a FIFO
// is refused without waiting for a writer, a symbolic link as its last
// element is refused, a file past limits.PolicyFileMaxBytes is a limit.
func TestLoadSourcePolicyHostile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := LoadSourcePolicy(ctx, fifo); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a FIFO was read as a policy")
		}
	case <-time.After(time.Minute):
		t.Fatal("LoadSourcePolicy waits on a FIFO")
	}
	real := filepath.Join(dir, "real.json")
	if err := os.WriteFile(real, []byte(`{"format": 1, "group": "g", "hosts": ["example.org"], "retention": "text_only"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSourcePolicy(ctx, real); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSourcePolicy(ctx, link); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("a symlinked policy: %v", err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, limits.PolicyFileMaxBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadSourcePolicy(ctx, big)
	wantCode(t, err, fault.Limit)
}

// TestBlobNeverExecutable: a kept file's bytes, even a script's with its
// mode bits, are a private, non-executable blob named by their SHA-256.
func TestBlobNeverExecutable(t *testing.T) {
	a := newArchive(t)
	out, err := a.AddFile(context.Background(), FileRequest{Collection: "c", Request: "r", Name: "run.sh", MediaType: "text/x-shellscript"}, strings.NewReader("#!/bin/sh\necho hi\n"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(filepath.Join(a.dir, filepath.FromSlash(blobPath(out.BlobSHA256))))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode() != 0o600 || out.BlobSHA256 != sha256String("#!/bin/sh\necho hi\n") {
		t.Fatalf("the blob: mode %v, name %s", st.Mode(), out.BlobSHA256)
	}
}

func init() {
	crashOps["add-same"] = func(ctx context.Context, env func(string) string) error {
		a, err := Open(ctx, env("DIR"))
		if err != nil {
			return err
		}
		defer a.Close()
		_, err = a.AddText(ctx, TextRequest{Collection: "c", Item: "same", Request: env("REQUEST"), Document: doc(env("TEXT"))})
		return err
	}
}

// TestConcurrentProcesses: separate processes send one request identity
// to one root at once: with one content every one gets the version, with
// four contents one wins and three get a conflict; one version a round.
func TestConcurrentProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts eight processes")
	}
	a := newArchive(t)
	dir := a.dir
	a.Close()
	round := func(request string, text func(i int) string) []string {
		children := make([]*testkit.Child, 4)
		for i := range children {
			children[i] = testkit.StartChild(t, "TestCrashChild", crashEnv+"=add-same", crashEnv+"_STEP=none",
				crashEnv+"_DIR="+dir, crashEnv+"_REQUEST="+request, crashEnv+"_TEXT="+text(i))
		}
		said := make([]string, len(children))
		for i, c := range children {
			out, _ := io.ReadAll(c.Stdout)
			c.Wait()
			said[i] = strings.TrimSpace(string(out))
		}
		return said
	}
	for i, s := range round("one", func(int) string { return "one content" }) {
		if !strings.HasPrefix(s, "done") {
			t.Fatalf("process %d with the same content: %q", i, s)
		}
	}
	done, conflicts := 0, 0
	for _, s := range round("other", func(i int) string { return fmt.Sprint("content ", i) }) {
		switch {
		case strings.HasPrefix(s, "done"):
			done++
		case strings.HasPrefix(s, "error: conflict"):
			conflicts++
		default:
			t.Fatalf("a process said %q", s)
		}
	}
	if done != 1 || conflicts != 3 {
		t.Fatalf("%d won and %d got a conflict, want 1 and 3", done, conflicts)
	}
	if n := versionsOf(t, dir, "c", "same"); n != 2 {
		t.Fatalf("%d versions after two rounds", n)
	}
	auditClean(t, dir)
}
