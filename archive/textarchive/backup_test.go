package textarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// filled is an archive with texts of two versions and two files.
func filled(t testing.TB) *Archive {
	t.Helper()
	a := newArchive(t)
	ctx := context.Background()
	addText(t, a, "papers", "p1", "r1", doc("the first text, é\u0301 and 👋🏽"))
	addText(t, a, "papers", "p1", "r2", doc("the second text", "of two parts"))
	addText(t, a, "notes", "n1", "r3", doc("a note"))
	for i, content := range []string{"file one bytes", strings.Repeat("file two ", 1000)} {
		must(a.AddFile(ctx, FileRequest{Collection: "files", Request: "f" + string(rune('0'+i)), Name: "f" + string(rune('0'+i)) + ".bin", MediaType: "application/octet-stream"}, strings.NewReader(content)))
	}
	return a
}

func backupOf(t *testing.T, a *Archive) (string, *BackupResult) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "backup.tar")
	r, err := a.Backup(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}
	return file, r
}

// entries lists a tar file's names.
func entries(t *testing.T, file string) []string {
	t.Helper()
	f := must(os.Open(file))
	defer f.Close()
	var names []string
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

func TestBackupRestore(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	c := cite(t, a, "v1", 0, 4, 5)
	file, r := backupOf(t, a)
	if got := entries(t, file); len(got) != 4 || got[0] != manifestName || got[1] != dbName || !strings.HasPrefix(got[2], "blobs/") {
		t.Fatalf("the backup's entries: %v", got)
	}
	if r.Manifest.Head.Seq != 5 || r.Manifest.Blobs.Count != 2 || r.Manifest.Archive != a.ID() {
		t.Fatalf("manifest %+v", r.Manifest)
	}
	_, err := a.Backup(ctx, file, nil)
	wantCode(t, err, fault.Conflict)

	v := must(VerifyBackup(ctx, file, &BackupOptions{ManifestSHA256: r.ManifestSHA256}))
	if !v.Audit.Clean() || v.Dir != "" {
		t.Fatalf("verification %+v", v)
	}
	dest := filepath.Join(t.TempDir(), "restored")
	res := must(Restore(ctx, file, dest, &BackupOptions{ManifestSHA256: r.ManifestSHA256}))
	if res.Dir != dest || !res.Audit.Clean() {
		t.Fatalf("restore %+v", res)
	}
	b := must(Open(ctx, dest))
	defer b.Close()
	if b.ID() != a.ID() {
		t.Fatalf("the restored archive's identity %s, not %s", b.ID(), a.ID())
	}
	if _, err := b.Check(ctx, &c.Citation); err != nil {
		t.Fatalf("a citation of the original, checked against the restore: %v", err)
	}
	vl := must(b.Versions(ctx, VersionsQuery{Collection: "papers", Item: "p1"}))
	if vl.Total != 2 {
		t.Fatalf("restored versions %+v", vl)
	}
	if hits := must(b.Search(ctx, SearchQuery{Text: "second"})); len(hits.Hits) != 1 {
		t.Fatalf("the restored index: %+v", hits)
	}
	_, err = Restore(ctx, file, dest, nil)
	wantCode(t, err, fault.Conflict)
	_, err = Restore(ctx, file, filepath.Join(t.TempDir(), "x"), &BackupOptions{ManifestSHA256: strings.Repeat("0", 64)})
	wantCode(t, err, fault.Integrity)
	// A backup of the restored archive is the same archive.
	file2, r2 := backupOf(t, b)
	if r2.Manifest.Database.SHA256 == "" || r2.Manifest.Blobs != r.Manifest.Blobs || r2.Manifest.Head != r.Manifest.Head {
		t.Fatalf("a backup of the restore: %+v", r2.Manifest)
	}
	_ = file2
}

// TestRestoreRefusesTampered flips a byte in each part of a backup (the
// manifest, the database, a blob, the tar framing) and cuts it short: each
// is refused with integrity, and nothing is published or left behind.
func TestRestoreRefusesTampered(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	file, _ := backupOf(t, a)
	data := must(os.ReadFile(file))
	find := func(s string) int64 {
		i := bytes.Index(data, []byte(s))
		if i < 0 {
			t.Fatalf("%q is not in the backup", s)
		}
		return int64(i)
	}
	cases := map[string]func(path string){
		"a byte of the manifest": func(p string) { flipByte(t, p, find(`"head"`)+2) },
		"a byte of the database": func(p string) { flipByte(t, p, find("SQLite format 3")+4096+100) },
		"a byte of a blob":       func(p string) { flipByte(t, p, find("file one bytes")+3) },
		"a byte of a header":     func(p string) { flipByte(t, p, find("blobs/")+8) },
		"cut short":              func(p string) { os.Truncate(p, int64(len(data))-2048) },
		"only the manifest":      func(p string) { os.Truncate(p, find("archive.db")) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "backup.tar")
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			damage(p)
			dest := filepath.Join(dir, "restored")
			_, err := Restore(ctx, p, dest, nil)
			if fault.CodeOf(err) != fault.Integrity {
				t.Fatalf("restore: %v", err)
			}
			if _, err := VerifyBackup(ctx, p, nil); fault.CodeOf(err) != fault.Integrity {
				t.Fatalf("verify-backup: %v", err)
			}
			left, _ := os.ReadDir(dir)
			if len(left) != 1 {
				t.Fatalf("the refused restore left %v", left)
			}
		})
	}
}

func TestBackupRefusesDamagedOriginals(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	v := must(a.Version(ctx, "v4"))
	flipByte(t, filepath.Join(a.dir, blobPath(v.BlobSHA256)), 1)
	dir := t.TempDir()
	_, err := a.Backup(ctx, filepath.Join(dir, "backup.tar"), nil)
	if fault.CodeOf(err) != fault.Integrity || !strings.Contains(err.Error(), v.BlobSHA256) {
		t.Fatalf("a backup of a damaged blob: %v", err)
	}
	flipByte(t, filepath.Join(a.dir, blobPath(v.BlobSHA256)), 1)
	tamper(t, a, `UPDATE parts SET text = 'a notE' WHERE version = 3`)
	_, err = a.Backup(ctx, filepath.Join(dir, "backup.tar"), nil)
	if fault.CodeOf(err) != fault.Integrity || !strings.Contains(err.Error(), "version v3 part 0") {
		t.Fatalf("a backup of damaged text: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a refused backup published %v", left)
	}
	if left, _ := os.ReadDir(a.dir); len(left) != 4 {
		t.Fatalf("a refused backup left %v in the root", left)
	}
}

func TestBackupBound(t *testing.T) {
	const max = limits.ArchiveBackupMaxBytes
	if err := checkAggregate(0, max, max); err != nil {
		t.Fatal(err)
	}
	if err := checkAggregate(max, 0, max); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][2]int64{{1, max}, {max + 1, 0}, {max / 2, max/2 + 1}} {
		if err := checkAggregate(c[0], c[1], max); fault.CodeOf(err) != fault.Limit {
			t.Errorf("%d + %d: %v", c[0], c[1], err)
		}
	}
	a := filled(t)
	ctx := context.Background()
	file, r := backupOf(t, a)
	exact := r.Manifest.TotalBytes
	dir := t.TempDir()
	_, err := a.Backup(ctx, filepath.Join(dir, "small.tar"), &BackupOptions{MaxBytes: exact - 1})
	wantCode(t, err, fault.Limit)
	_, err = a.Backup(ctx, filepath.Join(dir, "big.tar"), &BackupOptions{MaxBytes: max + 1})
	wantCode(t, err, fault.InvalidInput)
	must(a.Backup(ctx, filepath.Join(dir, "exact.tar"), &BackupOptions{MaxBytes: exact}))
	_, err = Restore(ctx, file, filepath.Join(dir, "r"), &BackupOptions{MaxBytes: exact - 1})
	wantCode(t, err, fault.Limit)
	must(Restore(ctx, file, filepath.Join(dir, "r"), &BackupOptions{MaxBytes: exact}))
}

func FuzzReadBackup(f *testing.F) {
	a := filled(f)
	file := filepath.Join(f.TempDir(), "b.tar")
	must(a.Backup(context.Background(), file, nil))
	f.Add(must(os.ReadFile(file)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := readBackup(context.Background(), bytes.NewReader(data), 64<<20, "", digestOnly{})
		if err == nil && (m == nil || m.TotalBytes != m.Database.Bytes+m.Blobs.Bytes) {
			t.Fatalf("a backup read without its manifest's sums: %+v", m)
		}
		if err != nil && fault.CodeOf(err) == fault.Internal {
			t.Fatalf("an internal failure: %v", err)
		}
	})
}

// TestBackupEntriesExact reads every entry of a backup back: each blob
// (one of several copy chunks and a remainder that needs padding) has the
// bytes of its original, and the stream ends as tar streams end.
func TestBackupEntriesExact(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), (2*copyChunkBytes+513)/16+1)[:2*copyChunkBytes+513]
	must(a.AddFile(ctx, FileRequest{Collection: "files", Request: "big", Name: "big.bin", MediaType: "application/octet-stream"}, bytes.NewReader(big)))
	file, r := backupOf(t, a)
	f := must(os.Open(file))
	defer f.Close()
	tr := tar.NewReader(f)
	blobs := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data := must(io.ReadAll(tr))
		if int64(len(data)) != h.Size || h.Mode != 0o600 || h.Typeflag != tar.TypeReg {
			t.Fatalf("entry %s: %d bytes of %d, mode %o", h.Name, len(data), h.Size, h.Mode)
		}
		if sha, ok := parseBlobEntry(h.Name); ok {
			blobs++
			if orig := must(os.ReadFile(filepath.Join(a.dir, blobPath(sha)))); !bytes.Equal(orig, data) || sha256Hex(data) != sha {
				t.Fatalf("blob %s differs from its original", sha)
			}
		}
	}
	if int64(blobs) != r.Manifest.Blobs.Count || blobs != 3 {
		t.Fatalf("%d blobs, the manifest names %d", blobs, r.Manifest.Blobs.Count)
	}
	st := must(f.Stat())
	if st.Size()%tarBlock != 0 {
		t.Fatalf("the backup's %d bytes are not whole blocks", st.Size())
	}
	must(VerifyBackup(ctx, file, &BackupOptions{ManifestSHA256: r.ManifestSHA256}))
}

// TestBackupRefusesLongerBlob: a blob file with a byte appended (its
// first bytes still those of its name) is refused, not cut to size.
func TestBackupRefusesLongerBlob(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	v := must(a.Version(ctx, "v4"))
	p := filepath.Join(a.dir, blobPath(v.BlobSHA256))
	f := must(os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0))
	must(f.Write([]byte("x")))
	f.Close()
	dir := t.TempDir()
	_, err := a.Backup(ctx, filepath.Join(dir, "backup.tar"), nil)
	if fault.CodeOf(err) != fault.Integrity || !strings.Contains(err.Error(), v.BlobSHA256) {
		t.Fatalf("a backup of a longer blob: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a refused backup published %v", left)
	}
}

// TestVerifyEntries: the verifier checks each entry's bytes as the file
// holds them, so a copy that differs from the digest it was given is
// refused, naming the entry.
func TestVerifyEntries(t *testing.T) {
	ctx := context.Background()
	f := must(os.Create(filepath.Join(t.TempDir(), "f")))
	defer f.Close()
	must(f.Write([]byte("headerAAAApadBBBB")))
	run := func(want string) error {
		spans := make(chan span, 5)
		spans <- span{off: 6, n: 2}
		spans <- span{off: 8, n: 2}
		spans <- span{name: "a", want: &BackupObject{SHA256: sha256Hex([]byte("AAAA")), Bytes: 4}}
		spans <- span{off: 13, n: 4}
		spans <- span{name: "b", want: &BackupObject{SHA256: want, Bytes: 4}}
		close(spans)
		return verifyEntries(ctx, f, spans)
	}
	if err := run(sha256Hex([]byte("BBBB"))); err != nil {
		t.Fatal(err)
	}
	if err := run(sha256Hex([]byte("BBBC"))); fault.CodeOf(err) != fault.Integrity || !strings.Contains(err.Error(), "b no longer") {
		t.Fatalf("a differing entry: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	spans := make(chan span, 1)
	spans <- span{off: 0, n: 4}
	close(spans)
	if err := verifyEntries(cancelled, f, spans); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("a cancelled verification: %v", err)
	}
}

// TestSnapshotConsistent: another connection that adds a version while
// the snapshot is taken, between its steps, is not in the backup: every
// step copies the one read transaction's database, whose head, versions
// and blobs the manifest names, and the backup restores clean.
func TestSnapshotConsistent(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	headOf := func(x *Archive) head {
		var h head
		if err := x.read(ctx, "head", func(t *txn) (err error) { h, err = t.head(); return err }); err != nil {
			t.Fatal(err)
		}
		return h
	}
	before := headOf(a)
	other := must(Open(ctx, a.dir))
	defer other.Close()
	saved := snapshotStepPages
	snapshotStepPages = 1
	steps := 0
	stepHook = func(s string) {
		if s != "backup.snapshot.step" {
			return
		}
		if steps++; steps == 2 {
			addText(t, other, "papers", "p9", "r9", doc("added while the snapshot was taken"))
			must(other.AddFile(ctx, FileRequest{Collection: "files", Request: "f9", Name: "f9.bin", MediaType: "application/octet-stream"}, strings.NewReader("added meanwhile")))
		}
	}
	t.Cleanup(func() { stepHook, snapshotStepPages = nil, saved })
	file, r := backupOf(t, a)
	if steps < 3 {
		t.Fatalf("the snapshot took %d steps", steps)
	}
	if after := headOf(a); after == before || r.Manifest.Head != before || r.Manifest.Blobs.Count != 2 {
		t.Fatalf("head before %v, after %v, the backup's %v with %d blobs", before, after, r.Manifest.Head, r.Manifest.Blobs.Count)
	}
	res := must(Restore(ctx, file, filepath.Join(t.TempDir(), "r"), &BackupOptions{ManifestSHA256: r.ManifestSHA256}))
	if !res.Audit.Clean() || res.Audit.Covered.TotalVersions != 5 {
		t.Fatalf("the restore: %+v", res.Audit)
	}
}

// TestBackupDestinationRefused: a backup file that is a symlink (to
// nothing, or to a file), a FIFO or a directory is refused as what it is,
// a symlink never followed; one in the archive root or under it, also
// through a symlinked directory, is refused; nothing is written anywhere.
func TestBackupDestinationRefused(t *testing.T) {
	ctx := context.Background()
	a := filled(t)
	out := t.TempDir()
	target := filepath.Join(out, "target")
	link := func(p string) { must(0, os.Symlink(target, p)) }
	fifo := func(p string) { must(0, syscall.Mkfifo(p, 0o600)) }
	rootLink := filepath.Join(out, "root-link")
	must(0, os.Symlink(a.dir, rootLink))
	cases := []struct {
		name string
		file string
		make func(string)
		code fault.Code
		says string
	}{
		{"a dangling symlink", filepath.Join(out, "dangling"), link, fault.Denied, "symbolic link"},
		{"a symlink to a file", filepath.Join(out, "to-file"), func(p string) { must(0, os.WriteFile(target, []byte("kept"), 0o600)); link(p) }, fault.Denied, "symbolic link"},
		{"a FIFO", filepath.Join(out, "fifo"), fifo, fault.InvalidInput, "not a regular file"},
		{"a directory", filepath.Join(out, "dir"), func(p string) { must(0, os.Mkdir(p, 0o700)) }, fault.InvalidInput, "not a regular file"},
		{"an existing file", filepath.Join(out, "file"), func(p string) { must(0, os.WriteFile(p, []byte("old"), 0o600)) }, fault.Conflict, "exists"},
		{"in the root", filepath.Join(a.dir, "backup.tar"), nil, fault.InvalidInput, "inside the archive root"},
		{"under the root", filepath.Join(a.dir, blobsDir, "backup.tar"), nil, fault.InvalidInput, "inside the archive root"},
		{"in the root through a symlink", filepath.Join(rootLink, "backup.tar"), nil, fault.InvalidInput, "inside the archive root"},
		{"in no directory", filepath.Join(out, "none", "backup.tar"), nil, fault.NotFound, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.make != nil {
				c.make(c.file)
			}
			_, err := a.Backup(ctx, c.file, nil)
			if fault.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.says) {
				t.Fatalf("%s: %v, want %s", c.file, err, c.code)
			}
		})
	}
	if data, err := os.ReadFile(target); err != nil || string(data) != "kept" {
		t.Fatalf("the symlinks' target: %q, %v", data, err)
	}
	if left, _ := os.ReadDir(a.dir); len(left) != 4 {
		t.Fatalf("a refused backup left %v in the root", left)
	}
	must(a.Backup(ctx, filepath.Join(out, "backup.tar"), nil))
}

// TestBackupRefusesSwappedBlob: a blob file swapped for a symlink to a
// copy of its bytes, or for a FIFO, fails the backup (integrity, naming
// the blob) without following the link or waiting on the FIFO.
func TestBackupRefusesSwappedBlob(t *testing.T) {
	ctx := context.Background()
	for name, swap := range map[string]func(p string){
		"a symlink to a copy": func(p string) {
			cp := filepath.Join(t.TempDir(), "copy")
			must(0, os.WriteFile(cp, must(os.ReadFile(p)), 0o600))
			must(0, os.Remove(p))
			must(0, os.Symlink(cp, p))
		},
		"a FIFO": func(p string) {
			must(0, os.Remove(p))
			must(0, syscall.Mkfifo(p, 0o600))
		},
	} {
		t.Run(name, func(t *testing.T) {
			a := filled(t)
			v := must(a.Version(ctx, "v4"))
			swap(filepath.Join(a.dir, blobPath(v.BlobSHA256)))
			dir := t.TempDir()
			_, err := a.Backup(ctx, filepath.Join(dir, "backup.tar"), nil)
			if fault.CodeOf(err) != fault.Integrity || !strings.Contains(err.Error(), v.BlobSHA256) {
				t.Fatalf("a backup of a swapped blob: %v", err)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a refused backup published %v", left)
			}
		})
	}
}
