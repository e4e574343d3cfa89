package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/internal/scope"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

const marker = "OUTSIDE-MARKER-7f3a"

// fixture is a root with assorted entries and an outside directory whose
// files hold marker.
type fixture struct {
	root, outside string
	p             *Provider
	device        bool
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	base := testkit.TempDir(t)
	f := &fixture{root: filepath.Join(base, "root"), outside: filepath.Join(base, "outside"), p: New()}
	mk := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	put := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	mk(f.root)
	mk(f.outside)
	mk(filepath.Join(f.root, "sub"))
	put(filepath.Join(f.outside, "secret.txt"), marker, 0o644)
	put(filepath.Join(f.root, "a.txt"), "alpha\n", 0o640)
	put(filepath.Join(f.root, "sub", "b.txt"), "beta\n", 0o644)
	put(filepath.Join(f.root, scope.StagingPrefix+"stray"), "half-written", 0o600)
	link("a.txt", filepath.Join(f.root, "link-in"))
	link(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.root, "link-out"))
	link("../outside/secret.txt", filepath.Join(f.root, "link-rel-out"))
	link("link-out", filepath.Join(f.root, "chain"))
	link("nowhere", filepath.Join(f.root, "dangling"))
	link(f.outside, filepath.Join(f.root, "dir-out"))
	link("/dev/null", filepath.Join(f.root, "devnull"))
	link("/proc/self/environ", filepath.Join(f.root, "proc"))
	if err := os.Link(filepath.Join(f.outside, "secret.txt"), filepath.Join(f.root, "hard")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(f.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(f.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	f.device = unix.Mknod(filepath.Join(f.root, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))) == nil
	return f
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

func TestOpenAndReadAll(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		want string
		code fault.Code
	}{
		{"a.txt", "alpha\n", ""},
		{"sub/b.txt", "beta\n", ""},
		{"link-in", "alpha\n", ""},
		{"hard", marker, ""}, // a hard link is a file in the root: reading it is allowed
		{"missing", "", fault.NotFound},
		{"sub", "", fault.InvalidInput},
		{".", "", fault.InvalidInput},
		{"link-out", "", fault.Denied},
		{"link-rel-out", "", fault.Denied},
		{"chain", "", fault.Denied},
		{"dir-out/secret.txt", "", fault.Denied},
		{"dangling", "", fault.NotFound},
		{"devnull", "", fault.Denied},
		{"proc", "", fault.Denied},
		{"fifo", "", fault.InvalidInput},
		{"sock", "", fault.InvalidInput},
		{"null", "", fault.InvalidInput},
		{scope.StagingPrefix + "stray", "", fault.InvalidInput},
		{"a.txt/x", "", fault.NotFound},
		{"../outside/secret.txt", "", fault.Denied},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "null" && !f.device {
				t.Skip("cannot create a device node here (needs CAP_MKNOD)")
			}
			data, v, err := readAll(f.p, ctx(t), in(f.root), c.name, 1<<20)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("ReadAll code %q (%v), want %q", got, err, c.code)
			}
			if string(data) != c.want || (err == nil) == v.IsZero() {
				t.Fatalf("ReadAll = %q %v", data, v)
			}
			if err != nil && strings.Contains(err.Error(), f.root) {
				t.Fatalf("error names the host path: %v", err)
			}
			file, err := open(f.p, ctx(t), in(f.root), c.name)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("Open code %q (%v), want %q", got, err, c.code)
			}
			if err != nil {
				return
			}
			defer file.Close()
			if _, ok := file.Version(); ok {
				t.Fatal("version known before EOF")
			}
			var buf bytes.Buffer
			if _, err := buf.ReadFrom(file); err != nil {
				t.Fatal(err)
			}
			if fv, ok := file.Version(); !ok || fv != v || buf.String() != c.want {
				t.Fatalf("streamed %q %v, want %v", buf.String(), fv, v)
			}
			w := make([]byte, 2)
			if n, err := file.ReadAt(w, 1); n != 2 || err != nil || string(w) != c.want[1:3] {
				t.Fatalf("ReadAt = %d %v %q", n, err, w)
			}
		})
	}
}

func TestReadAllBound(t *testing.T) {
	f := newFixture(t)
	data := bytes.Repeat([]byte("x"), 100)
	if err := os.WriteFile(filepath.Join(f.root, "big"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got, _, err := readAll(f.p, ctx(t), in(f.root), "big", 100); err != nil || len(got) != 100 {
		t.Fatalf("at the bound: %d %v", len(got), err)
	}
	if _, _, err := readAll(f.p, ctx(t), in(f.root), "big", 99); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
}

func TestStat(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		mode iofs.FileMode
		code fault.Code
	}{
		{"a.txt", 0, ""},
		{"sub", iofs.ModeDir, ""},
		{"link-out", iofs.ModeSymlink, ""}, // lstat: the link itself, never its outside target
		{"dangling", iofs.ModeSymlink, ""},
		{"fifo", iofs.ModeNamedPipe, ""},
		{"dir-out/secret.txt", 0, fault.Denied},
		{"nope", 0, fault.NotFound},
		{scope.StagingPrefix + "stray", 0, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info, err := stat(f.p, ctx(t), in(f.root), c.name)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil && info.Mode.Type() != c.mode {
				t.Fatalf("mode %v, want %v", info.Mode.Type(), c.mode)
			}
		})
	}
}

func TestReadDirAndWalk(t *testing.T) {
	f := newFixture(t)
	entries, total, err := readDir(f.p, ctx(t), in(f.root), ".", 3)
	if err != nil {
		t.Fatal(err)
	}
	all, total2, err := readDir(f.p, ctx(t), in(f.root), ".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 || total != total2 || len(all) != total {
		t.Fatalf("ReadDir: %d shown of %d; all %d of %d", len(entries), total, len(all), total2)
	}
	for _, e := range all {
		if scope.IsStaging(e.Name) {
			t.Fatalf("staging file listed: %s", e.Name)
		}
	}
	if _, _, err := readDir(f.p, ctx(t), in(f.root), "dir-out", 0); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("listing a symlink out: %v", err)
	}
	var walked []string
	err = walk(f.p, ctx(t), in(f.root), ".", func(info files.Info) error {
		walked = append(walked, info.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(walked, ",")
	if strings.Contains(joined, "secret") || strings.Contains(joined, scope.StagingPrefix) || !strings.Contains(joined, "sub/b.txt") {
		t.Fatalf("walk: %s", joined)
	}
	if walked[0] != "." {
		t.Fatalf("walk starts at %q", walked[0])
	}
	n := 0
	walk(f.p, ctx(t), in(f.root), ".", func(files.Info) error { n++; return iofs.SkipAll })
	if n != 1 {
		t.Fatalf("SkipAll visited %d", n)
	}
	// A walk must start at a directory or a regular file: a FIFO is
	// refused, not reported as an empty walk.
	n = 0
	err = walk(f.p, ctx(t), in(f.root), "fifo", func(files.Info) error { n++; return nil })
	if fault.CodeOf(err) != fault.InvalidInput || n != 0 {
		t.Fatalf("walk from a FIFO: %v, visited %d", err, n)
	}
}

func TestReadDirEntryBound(t *testing.T) {
	if testing.Short() {
		t.Skip("creates limits.WalkMaxFiles files")
	}
	f := newFixture(t)
	dir := filepath.Join(f.root, "many")
	os.Mkdir(dir, 0o755)
	for i := range limits.WalkMaxFiles {
		fd, err := unix.Open(filepath.Join(dir, "f"+itoa(i)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		unix.Close(fd)
	}
	if _, total, err := readDir(f.p, ctx(t), in(f.root), "many", 10); err != nil || total != limits.WalkMaxFiles {
		t.Fatalf("at the bound: %d %v", total, err)
	}
	os.WriteFile(filepath.Join(dir, "one-more"), nil, 0o644)
	if _, _, err := readDir(f.p, ctx(t), in(f.root), "many", 10); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("one past the bound: %v", err)
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + string(rune('a'+i%26)) + fmtInt(i))
}

func fmtInt(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		if i /= 10; i == 0 {
			return string(b[n:])
		}
	}
}

func TestWrite(t *testing.T) {
	f := newFixture(t)
	va := files.VersionOf([]byte("alpha\n"))
	cases := []struct {
		name string
		file string
		opts *files.WriteOptions
		code fault.Code
	}{
		{"create", "new.txt", nil, ""},
		{"create with parents", "x/y/z.txt", nil, ""},
		{"create guarded absent", "new2.txt", &files.WriteOptions{Guard: true}, ""},
		{"guarded absent but exists", "sub/b.txt", &files.WriteOptions{Guard: true}, fault.Conflict},
		{"replace unguarded", "sub/b.txt", nil, ""},
		{"replace guarded right version", "a.txt", &files.WriteOptions{Guard: true, Expect: va}, ""},
		{"replace guarded stale version", "a.txt", &files.WriteOptions{Guard: true, Expect: va}, fault.Conflict},
		{"guarded but deleted", "gone.txt", &files.WriteOptions{Guard: true, Expect: va}, fault.Conflict},
		{"symlink in root refused", "link-in", nil, fault.Denied},
		{"symlink out refused", "link-out", nil, fault.Denied},
		{"dangling symlink refused", "dangling", nil, fault.Denied},
		{"through a dir symlink out", "dir-out/new.txt", nil, fault.Denied},
		{"directory", "sub", nil, fault.InvalidInput},
		{"fifo", "fifo", nil, fault.InvalidInput},
		{"socket", "sock", nil, fault.InvalidInput},
		{"root itself", ".", nil, fault.InvalidInput},
		{"staging name", scope.StagingPrefix + "x", nil, fault.InvalidInput},
		{"parent is a file", "a.txt/x", nil, fault.NotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := peek(filepath.Join(f.root, c.file))
			content := []byte("new content of " + c.name)
			v, err := write(f.p, ctx(t), in(f.root), c.file, content, c.opts)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			after := peek(filepath.Join(f.root, c.file))
			if err != nil {
				if !bytes.Equal(before, after) {
					t.Fatalf("failed write changed the file: %q -> %q", before, after)
				}
				return
			}
			if !bytes.Equal(after, content) || v != files.VersionOf(content) {
				t.Fatalf("wrote %q, version %v", after, v)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(f.outside, "secret.txt")); string(b) != marker {
		t.Fatalf("outside file changed: %q", b)
	}
	assertNoStaging(t, f.root)
}

// peek reads p if it is a regular file (never through a symlink, never
// blocking on a FIFO).
func peek(p string) []byte {
	st, err := os.Lstat(p)
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	b, _ := os.ReadFile(p)
	return b
}

func assertNoStaging(t *testing.T, root string) {
	t.Helper()
	filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if d != nil && strings.HasPrefix(d.Name(), scope.StagingPrefix) && d.Name() != scope.StagingPrefix+"stray" {
			t.Errorf("staging file left behind: %s", p)
		}
		return nil
	})
}

func TestWriteKeepsModeAndReplacesHardLink(t *testing.T) {
	f := newFixture(t)
	if _, err := write(f.p, ctx(t), in(f.root), "a.txt", []byte("changed"), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(f.root, "a.txt")); st.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640", st.Mode().Perm())
	}
	if _, err := write(f.p, ctx(t), in(f.root), "fresh", []byte("x"), nil); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(filepath.Join(f.root, "fresh")); st.Mode().Perm() != newFileMode {
		t.Fatalf("new file mode %v", st.Mode().Perm())
	}
	// "hard" shares its inode with outside/secret.txt: the write must
	// replace the link, leaving the outside file as it was.
	secret := filepath.Join(f.outside, "secret.txt")
	var st unix.Stat_t
	unix.Stat(secret, &st)
	if st.Nlink < 2 {
		t.Fatalf("fixture: nlink %d", st.Nlink)
	}
	if _, err := write(f.p, ctx(t), in(f.root), "hard", []byte("through the link?"), nil); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(secret); string(b) != marker {
		t.Fatalf("outside file written through a hard link: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "hard")); string(b) != "through the link?" {
		t.Fatalf("link not replaced: %q", b)
	}
	unix.Stat(secret, &st)
	if st.Nlink != 1 {
		t.Fatalf("outside nlink %d after replace, want 1", st.Nlink)
	}
}

func TestMove(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name, from, to string
		code           fault.Code
	}{
		{"rename", "a.txt", "a2.txt", ""},
		{"into new dirs", "a2.txt", "n/m/a3.txt", ""},
		{"directory", "sub", "sub2", ""},
		{"onto existing", "n/m/a3.txt", "sub2/b.txt", fault.Conflict},
		{"missing", "nope", "x", fault.NotFound},
		{"symlink", "link-out", "moved-link", fault.InvalidInput},
		{"fifo", "fifo", "moved-fifo", fault.InvalidInput},
		{"into itself", "sub2", "sub2/inner", fault.InvalidInput},
		{"same", "sub2", "sub2", fault.InvalidInput},
		{"out through symlinked dir", "n/m/a3.txt", "dir-out/x", fault.Denied},
		{"staging source", scope.StagingPrefix + "stray", "s", fault.InvalidInput},
		{"staging target", "n/m/a3.txt", scope.StagingPrefix + "y", fault.InvalidInput},
		{"root", ".", "x", fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := move(f.p, ctx(t), in(f.root), c.from, c.to)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(f.root, "sub2", "b.txt")); string(b) != "beta\n" {
		t.Fatalf("existing file replaced: %q", b)
	}
	if _, err := os.Stat(filepath.Join(f.outside, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("moved outside the root")
	}
}

func TestFileReader(t *testing.T) {
	f := newFixture(t)
	roots := []string{f.root}
	cases := []struct {
		path string
		max  int64
		code fault.Code
	}{
		{"a.txt", 6, ""},
		{filepath.Join(f.root, "a.txt"), 6, ""},
		{"a.txt", 5, fault.Limit},
		{"../outside/secret.txt", 100, fault.Denied},
		{filepath.Join(f.outside, "secret.txt"), 100, fault.Denied},
		{"link-out", 100, fault.Denied},
		{"fifo", 100, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			b, err := f.p.ReadFile(ctx(t), roots, c.path, c.max)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if bytes.Contains(b, []byte(marker)) {
				t.Fatal("read outside")
			}
		})
	}
	if _, err := f.p.ReadFile(ctx(t), nil, "a.txt", 10); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("no capability: %v", err)
	}
}

func TestCanceledContext(t *testing.T) {
	f := newFixture(t)
	c, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := write(f.p, c, in(f.root), "x", []byte("y"), nil); err == nil {
		t.Fatal("write with a canceled context succeeded")
	}
	if _, err := os.Stat(filepath.Join(f.root, "x")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("canceled write created the file")
	}
	if _, err := open(f.p, c, in(f.root), "a.txt"); err == nil {
		t.Fatal("open with a canceled context succeeded")
	}
}

// A final symlink is followed inside the root for limits.SymlinkMaxHops
// links in a row, not one more.
func TestSymlinkHops(t *testing.T) {
	f := newFixture(t)
	chain := func(n int) string {
		prev := "a.txt"
		for i := n; i >= 1; i-- {
			name := fmt.Sprintf("hop%d-%d", n, i)
			if err := os.Symlink(prev, filepath.Join(f.root, name)); err != nil {
				t.Fatal(err)
			}
			prev = name
		}
		return prev
	}
	if b, _, err := readAll(f.p, ctx(t), in(f.root), chain(limits.SymlinkMaxHops), 100); err != nil || string(b) != "alpha\n" {
		t.Fatalf("%d links: %q %v", limits.SymlinkMaxHops, b, err)
	}
	if _, _, err := readAll(f.p, ctx(t), in(f.root), chain(limits.SymlinkMaxHops+1), 100); fault.CodeOf(err) != fault.Denied {
		t.Fatalf("%d links: %v, want denied", limits.SymlinkMaxHops+1, err)
	}
	if err := os.Symlink(scope.StagingPrefix+"stray", filepath.Join(f.root, "to-staging")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := readAll(f.p, ctx(t), in(f.root), "to-staging", 100); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("symlink into the staging namespace: %v, want invalid_input", err)
	}
}
