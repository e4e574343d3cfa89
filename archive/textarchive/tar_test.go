package textarchive

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/capkit/capkit/fault"
)

// The backup's tar framing is written by hand (tarWriter: archive/tar's
// headers, its own padding and end blocks); these tests read what it
// writes with archive/tar and GNU tar and compare every entry.

// tarEntry is one entry written with tarWriter.
type tarEntry struct {
	name string
	data []byte
}

var tarMtime = time.Unix(1764676800, 0)

// writeTar writes entries with tarWriter as a backup does (odd entries
// from memory, even ones copied from a file by the kernel), each read
// back and verified, to a new file it returns.
func writeTar(t testing.TB, entries []tarEntry) (string, error) {
	t.Helper()
	dir := t.TempDir()
	f := must(os.Create(filepath.Join(dir, "t.tar")))
	defer f.Close()
	g, ctx := errgroup.WithContext(context.Background())
	spans := make(chan span, verifyLag)
	g.Go(func() error { return verifyEntries(ctx, f, spans) })
	g.Go(func() error {
		defer close(spans)
		tw := &tarWriter{f: f, spans: spans, mtime: tarMtime}
		for i, e := range entries {
			if err := writeTarEntry(ctx, tw, filepath.Join(dir, fmt.Sprint("src", i)), i, e); err != nil {
				return err
			}
		}
		return tw.close()
	})
	return f.Name(), g.Wait()
}

func writeTarEntry(ctx context.Context, tw *tarWriter, src string, i int, e tarEntry) error {
	if i%2 == 1 {
		return tw.bytes(ctx, e.name, e.data)
	}
	if err := os.WriteFile(src, e.data, 0o600); err != nil {
		return err
	}
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	return tw.file(ctx, e.name, f, BackupObject{SHA256: sha256Hex(e.data), Bytes: int64(len(e.data))})
}

// readTar reads a tar file with archive/tar, failing on any entry that is
// not a regular file of mode 0600 with the time mtime (zero: the first
// entry's), or a stream not of whole blocks.
func readTar(t testing.TB, file string, mtime time.Time) []tarEntry {
	t.Helper()
	f := must(os.Open(file))
	defer f.Close()
	if st := must(f.Stat()); st.Size()%tarBlock != 0 {
		t.Fatalf("the stream's %d bytes are not whole blocks", st.Size())
	}
	var out []tarEntry
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("archive/tar, after %d entries: %v", len(out), err)
		}
		if mtime.IsZero() {
			mtime = h.ModTime
		}
		if h.Typeflag != tar.TypeReg || h.Mode != 0o600 || !h.ModTime.Equal(mtime) {
			t.Fatalf("entry %q: type %q, mode %o, time %v", h.Name, h.Typeflag, h.Mode, h.ModTime)
		}
		data := must(io.ReadAll(tr))
		if int64(len(data)) != h.Size {
			t.Fatalf("entry %q: %d bytes of %d", h.Name, len(data), h.Size)
		}
		out = append(out, tarEntry{h.Name, data})
	}
}

func sameEntries(t testing.TB, want, got []tarEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries read, %d written", len(got), len(want))
	}
	for i := range want {
		if got[i].name != want[i].name || !bytes.Equal(got[i].data, want[i].data) {
			t.Fatalf("entry %d: %q of %d bytes read, %q of %d written", i, clipName(got[i].name), len(got[i].data), clipName(want[i].name), len(want[i].data))
		}
	}
}

func clipName(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

func filler(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/256)
	}
	return b
}

// tarEdges are the framing's edges: sizes about a block, names about
// USTAR's 100-byte name field and 155-byte prefix, and names only PAX
// holds.
var tarEdges = map[string][]tarEntry{
	"empty":            {{"empty", nil}, {"after-empty", []byte("x")}},
	"511, 512 and 513": {{"a511", filler(511)}, {"a512", filler(512)}, {"a513", filler(513)}, {"a1", filler(1)}},
	"a chunk and one":  {{"chunk", filler(copyChunkBytes + 1)}, {"small", filler(3)}},
	"names of 99, 100 and 101 bytes": {
		{strings.Repeat("n", 99), filler(10)}, {strings.Repeat("o", 100), filler(11)}, {strings.Repeat("p", 101), filler(12)},
		{strings.Repeat("d", 60) + "/" + strings.Repeat("q", 100), filler(13)},
	},
	"names of 255 and more bytes": {
		{strings.Repeat("a", 155) + "/" + strings.Repeat("b", 99), filler(14)},
		{strings.Repeat("c", 200) + "/" + strings.Repeat("e", 200) + "/f", filler(15)},
		{strings.Repeat("g/", 300) + "h", filler(16)},
	},
	"names not ASCII": {
		{"blobs/é\u0301/👋🏽", filler(17)}, {"名前/テキスト.txt", filler(18)}, {"Ωmega", nil},
		{strings.Repeat("ü", 60), filler(19)},
	},
	"the backup's names": {{manifestName, []byte(`{}`)}, {dbName, filler(4096)}, {blobPath(strings.Repeat("ab", 32)), filler(700)}},
}

// TestTarFramingEdges writes each edge case and reads it back with
// archive/tar: every name, size, mode and byte as written.
func TestTarFramingEdges(t *testing.T) {
	for name, entries := range tarEdges {
		t.Run(name, func(t *testing.T) {
			file, err := writeTar(t, entries)
			if err != nil {
				t.Fatal(err)
			}
			sameEntries(t, entries, readTar(t, file, tarMtime))
		})
	}
	t.Run("many entries", func(t *testing.T) {
		var entries []tarEntry
		for i := range 3000 {
			entries = append(entries, tarEntry{fmt.Sprintf("many/%04d", i), filler(i % 1100)})
		}
		file := must(writeTar(t, entries))
		sameEntries(t, entries, readTar(t, file, tarMtime))
	})
}

// TestTarRefusesBadNames: a name with a NUL byte (which USTAR would cut)
// or not UTF-8 is refused, nothing written under another name.
func TestTarRefusesBadNames(t *testing.T) {
	for _, name := range []string{"a\x00b", "dir\x00/b", "\xff\xfe"} {
		_, err := writeTar(t, []tarEntry{{"first", nil}, {name, filler(3)}})
		if fault.CodeOf(err) != fault.Internal || !strings.Contains(err.Error(), "NUL byte or is not UTF-8") {
			t.Errorf("%q: %v", name, err)
		}
	}
}

// sparseTar writes an entry of size bytes (a hole, not written) and then
// a small one, with tarWriter's header and framing.
func sparseTar(t *testing.T, size int64) string {
	t.Helper()
	f := must(os.Create(filepath.Join(t.TempDir(), "big.tar")))
	defer f.Close()
	tw := &tarWriter{f: f, spans: make(chan span, 8), mtime: tarMtime}
	if err := tw.header(dbName, size); err != nil {
		t.Fatal(err)
	}
	tw.off += size
	if err := f.Truncate(tw.off); err != nil {
		t.Fatal(err)
	}
	must(f.Seek(tw.off, io.SeekStart))
	ctx := context.Background()
	if err := tw.end(ctx, dbName, BackupObject{}); err != nil {
		t.Fatal(err)
	}
	if err := tw.bytes(ctx, "after", []byte("the entry after")); err != nil {
		t.Fatal(err)
	}
	if err := tw.close(); err != nil {
		t.Fatal(err)
	}
	return f.Name()
}

// tarSizeEdges are entry sizes about USTAR's limit (11 octal digits,
// 8 GiB - 1) up to the backup's largest database: archive/tar writes a
// PAX size past it.
var tarSizeEdges = []int64{1<<33 - 1, 1 << 33, 1<<33 + 511, 20 << 30}

// TestTarSizesPastOctal reads entries of the sizes in tarSizeEdges back
// with archive/tar: the size as written, and the entry after it intact.
func TestTarSizesPastOctal(t *testing.T) {
	for _, size := range tarSizeEdges {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			file := sparseTar(t, size)
			f := must(os.Open(file))
			defer f.Close()
			tr := tar.NewReader(f)
			h := must(tr.Next())
			pax := h.Format&tar.FormatPAX != 0
			if h.Name != dbName || h.Size != size || pax != (size > 1<<33-1) {
				t.Fatalf("the big entry: %q of %d bytes, format %v", h.Name, h.Size, h.Format)
			}
			h = must(tr.Next())
			if data := must(io.ReadAll(tr)); h.Name != "after" || string(data) != "the entry after" {
				t.Fatalf("the entry after: %q %q", h.Name, data)
			}
			if _, err := tr.Next(); err != io.EOF {
				t.Fatalf("after the last entry: %v", err)
			}
		})
	}
}

// gnuTar is GNU tar's path, the test skipped (and said so) without it.
func gnuTar(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("tar")
	if err == nil {
		if out, verr := exec.Command(p, "--version").Output(); verr != nil || !bytes.Contains(out, []byte("GNU tar")) {
			err = fmt.Errorf("%s is not GNU tar", p)
		}
	}
	if err != nil {
		t.Logf("NOT CHECKED: the backup's tar framing against GNU tar (%v)", err)
		t.Skip("GNU tar is not installed: the framing is not checked against it")
	}
	return p
}

// tvLine is a line of tar -tv: mode, owner, size, date, time, name.
var tvLine = regexp.MustCompile(`^(\S+) (\S+) +(\d+) (\S+) (\S+) (.*)$`)

// gnuList lists a tar file with GNU tar: each entry's name and size,
// failing on any that is not "-rw-------".
func gnuList(t *testing.T, tarPath, file string) map[string]int64 {
	t.Helper()
	out, err := exec.Command(tarPath, "--quoting-style=literal", "-tvf", file).CombinedOutput()
	if err != nil {
		t.Fatalf("tar -tvf: %v: %s", err, out)
	}
	got := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		m := tvLine.FindStringSubmatch(line)
		if m == nil || m[1] != "-rw-------" {
			t.Fatalf("tar -tv line %q", line)
		}
		got[m[6]] = must(strconv.ParseInt(m[3], 10, 64))
	}
	return got
}

// TestTarWithGNUTar lists the edge cases and the sizes past USTAR's limit
// with GNU tar (names and sizes), extracts the edge cases and compares
// every file's bytes and mode, and does the same with a real backup.
func TestTarWithGNUTar(t *testing.T) {
	tarPath := gnuTar(t)
	check := func(t *testing.T, file string, entries []tarEntry) {
		listed := gnuList(t, tarPath, file)
		if len(listed) != len(entries) {
			t.Fatalf("tar -tv lists %d entries, %d written", len(listed), len(entries))
		}
		out := t.TempDir()
		if b, err := exec.Command(tarPath, "-xf", file, "-C", out).CombinedOutput(); err != nil {
			t.Fatalf("tar -xf: %v: %s", err, b)
		}
		for _, e := range entries {
			st, err := os.Lstat(filepath.Join(out, e.name))
			if err != nil || listed[e.name] != int64(len(e.data)) || !st.Mode().IsRegular() || st.Mode().Perm() != 0o600 {
				t.Fatalf("%q: listed with %d bytes of %d, extracted %v (%v)", clipName(e.name), listed[e.name], len(e.data), st, err)
			}
			if data := must(os.ReadFile(filepath.Join(out, e.name))); !bytes.Equal(data, e.data) {
				t.Fatalf("%q: the extracted bytes differ", clipName(e.name))
			}
		}
	}
	for name, entries := range tarEdges {
		t.Run(name, func(t *testing.T) { check(t, must(writeTar(t, entries)), entries) })
	}
	t.Run("sizes past octal", func(t *testing.T) {
		for _, size := range tarSizeEdges {
			if got := gnuList(t, tarPath, sparseTar(t, size)); len(got) != 2 || got[dbName] != size || got["after"] != 15 {
				t.Fatalf("tar -tv of an entry of %d bytes: %v", size, got)
			}
		}
	})
	t.Run("a backup", func(t *testing.T) {
		a := filled(t)
		file, r := backupOf(t, a)
		var entries []tarEntry
		for _, e := range readTar(t, file, time.Time{}) {
			if e.name == manifestName && sha256Hex(e.data) != r.ManifestSHA256 || e.name == dbName && sha256Hex(e.data) != r.Manifest.Database.SHA256 {
				t.Fatalf("%s differs from what the backup reported", e.name)
			}
			if sha, ok := parseBlobEntry(e.name); ok && !bytes.Equal(e.data, must(os.ReadFile(filepath.Join(a.dir, blobPath(sha))))) {
				t.Fatalf("blob %s differs from its original", sha)
			}
			entries = append(entries, e)
		}
		if len(entries) != 4 {
			t.Fatalf("%d entries", len(entries))
		}
		check(t, file, entries)
	})
}

// FuzzTarFraming writes the entries a fuzzed input names (one a line,
// each with a slice of the data) and reads them back with archive/tar:
// the same entries, or a typed refusal of a name tar cannot hold.
func FuzzTarFraming(f *testing.F) {
	f.Add("a\nb", []byte("some data"))
	f.Add(strings.Repeat("x", 100)+"\n"+strings.Repeat("y/", 80)+"z", filler(1030))
	f.Add("é\U0001F44B\n名前", filler(513))
	f.Add("a\x00b", []byte{1})
	f.Fuzz(func(t *testing.T, names string, data []byte) {
		lines := strings.Split(names, "\n")
		if len(lines) > 16 || len(names) > 4096 {
			return
		}
		var entries []tarEntry
		for i, name := range lines {
			n := (i*173 + len(name)*31) % (len(data) + 1)
			entries = append(entries, tarEntry{name, data[:n]})
		}
		file, err := writeTar(t, entries)
		if err != nil {
			if fault.CodeOf(err) == fault.Internal && strings.Contains(err.Error(), "NUL byte or is not UTF-8") {
				return
			}
			t.Fatalf("writing %q: %v", lines, err)
		}
		sameEntries(t, entries, readTar(t, file, tarMtime))
	})
}
