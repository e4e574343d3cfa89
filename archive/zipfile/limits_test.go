package zipfile

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/limits"
)

// TestLimitEdges extracts at each bound and refuses one past it, with
// lowered bounds where the defaults would need large fixtures.
func TestLimitEdges(t *testing.T) {
	k := func(n int) []byte { return make([]byte, n) }
	arch := func(ms ...rawMember) rawArchive { return rawArchive{members: ms} }
	exp := func(ms ...rawMember) Expect {
		e := Expect{}
		for _, m := range ms {
			e[m.name] = sum(k(int(m.usize)))
		}
		return e
	}
	deep := strings.Repeat("d/", limits.ZipMaxPathDepth-1) + "f"
	files := func(n int) []rawMember {
		var ms []rawMember
		for i := range n {
			ms = append(ms, stored("f"+strconv.Itoa(i), nil))
		}
		return ms
	}
	one := stored("a", k(10))
	cdOf := func(a rawArchive) int64 {
		b := a.bytes()
		return int64(binary.LittleEndian.Uint32(b[len(b)-10:]))
	}
	cases := []struct {
		name string
		a    rawArchive
		e    Expect
		lim  Limits
		code fault.Code
	}{
		{"files at limit", arch(files(3)...), exp(files(3)...), Limits{MaxFiles: 3}, ""},
		{"files past limit", arch(files(4)...), exp(files(3)...), Limits{MaxFiles: 3}, fault.Limit},
		{"member at limit", arch(stored("a", k(1000))), exp(stored("a", k(1000))), Limits{MaxMemberBytes: 1000}, ""},
		{"member past limit", arch(stored("a", k(1001))), exp(stored("a", k(1001))), Limits{MaxMemberBytes: 1000}, fault.Limit},
		{"deflated member past limit", arch(deflated("a", k(1001))), exp(stored("a", k(1001))), Limits{MaxMemberBytes: 1000}, fault.Limit},
		{"total at limit", arch(stored("a", k(1000)), stored("b", k(1000))), exp(stored("a", k(1000)), stored("b", k(1000))), Limits{MaxTotalBytes: 2000}, ""},
		{"total past limit", arch(stored("a", k(1000)), stored("b", k(1001))), exp(stored("a", k(1000)), stored("b", k(1001))), Limits{MaxTotalBytes: 2000}, fault.Limit},
		{"central directory at limit", arch(one), exp(one), Limits{MaxCentralDirectoryBytes: cdOf(arch(one))}, ""},
		{"central directory past limit", arch(one), exp(one), Limits{MaxCentralDirectoryBytes: cdOf(arch(one)) - 1}, fault.Limit},
		{"depth at limit", arch(stored(deep, nil)), Expect{deep: sum(nil)}, Limits{}, ""},
		{"depth past limit", arch(stored("x/"+deep, nil)), Expect{deep: sum(nil)}, Limits{}, fault.Limit},
		{"lowered depth past limit", arch(stored("a/b/c", nil)), Expect{"a/b/c": sum(nil)}, Limits{MaxPathDepth: 2}, fault.Limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			archive := writeArchive(t, c.a.bytes())
			parent := t.TempDir()
			_, err := Extract(context.Background(), archive, filepath.Join(parent, "out"), c.e, &ExtractOptions{Limits: c.lim})
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q, want %q (%v)", got, c.code, err)
			}
			if want := map[bool]int{true: 1, false: 0}[c.code == ""]; len(entries(t, parent)) != want {
				t.Fatalf("parent holds %v", entries(t, parent))
			}
		})
	}
}

// TestDefaultLimits exercises the real bounds where that is cheap: 10,000
// members listed and 10,001 refused, a 128 MiB member verified and one byte
// more refused both by its declaration and by its stream.
func TestDefaultLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("inflates 256 MiB")
	}
	ctx := context.Background()
	var a rawArchive
	for i := range limits.ZipMaxFiles {
		a.members = append(a.members, stored("f"+strconv.Itoa(i), nil))
	}
	l, err := List(ctx, writeArchive(t, a.bytes()), nil)
	if err != nil || len(l.Entries) != limits.ZipMaxFiles {
		t.Fatalf("10,000 members: %v", err)
	}
	a.members = append(a.members, stored("one-more", nil))
	if _, err := List(ctx, writeArchive(t, a.bytes()), nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("10,001 members: %v, want limit", err)
	}

	const edge = limits.ZipMaxMemberBytes
	zeros := deflatedZeros(edge + 1)
	zsum := newZeroHash(edge)
	big := rawMember{name: "big", method: 8, data: deflatedZeros(edge), usize: edge, crc: crcZeros(edge), made: unixHost | 20, ext: unixAttrs(0o644)}
	if _, err := Verify(ctx, writeArchive(t, rawArchive{members: []rawMember{big}}.bytes()), Expect{"big": zsum}, nil); err != nil {
		t.Fatalf("128 MiB member: %v", err)
	}
	over := big
	over.data, over.usize, over.crc = zeros, edge+1, crcZeros(edge+1)
	if _, err := Verify(ctx, writeArchive(t, rawArchive{members: []rawMember{over}}.bytes()), Expect{"big": zsum}, nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("declared 128 MiB + 1: %v, want limit", err)
	}
	lying := big
	lying.data = zeros // declares the limit, holds one byte more
	if _, err := Verify(ctx, writeArchive(t, rawArchive{members: []rawMember{lying}}.bytes()), Expect{"big": zsum}, nil); fault.CodeOf(err) != fault.Integrity {
		t.Fatalf("stream of 128 MiB + 1: %v, want integrity", err)
	}
}

// TestRefusedInputs covers archives and destinations that are not what they
// must be.
func TestRefusedInputs(t *testing.T) {
	ctx := context.Background()
	good := writeArchive(t, rawArchive{members: []rawMember{stored("a", []byte("x"))}}.bytes())
	expect := Expect{"a": sum([]byte("x"))}
	dir := t.TempDir()
	link := filepath.Join(dir, "link.zip")
	os.Symlink(good, link)
	fifo := filepath.Join(dir, "fifo.zip")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	junk := writeArchive(t, []byte("this is not a zip archive at all"))
	trunc := func() string {
		b := rawArchive{members: []rawMember{stored("a", []byte("x"))}}.bytes()
		return writeArchive(t, b[:len(b)-5])
	}()
	exists := t.TempDir()
	cases := []struct {
		name, archive, dest string
		code                fault.Code
	}{
		{"symlinked archive", link, filepath.Join(t.TempDir(), "o"), fault.Denied},
		{"FIFO archive", fifo, filepath.Join(t.TempDir(), "o"), fault.InvalidInput},
		{"directory archive", dir, filepath.Join(t.TempDir(), "o"), fault.InvalidInput},
		{"missing archive", filepath.Join(dir, "nope.zip"), filepath.Join(t.TempDir(), "o"), fault.NotFound},
		{"not a zip", junk, filepath.Join(t.TempDir(), "o"), fault.InvalidInput},
		{"truncated", trunc, filepath.Join(t.TempDir(), "o"), fault.InvalidInput},
		{"relative archive", "in.zip", filepath.Join(t.TempDir(), "o"), fault.InvalidInput},
		{"relative destination", good, "out", fault.InvalidInput},
		{"existing destination", good, exists, fault.Conflict},
		{"missing parent", good, filepath.Join(t.TempDir(), "no", "o"), fault.NotFound},
		{"root destination", good, "/", fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Extract(ctx, c.archive, c.dest, expect, nil)
			wantFault(t, err, c.code, nil)
		})
	}
	if len(entries(t, exists)) != 0 {
		t.Fatal("existing destination was written into")
	}
}

func TestCreateRefusals(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	os.WriteFile(file, []byte("data"), 0o600)
	link := filepath.Join(dir, "l")
	os.Symlink(file, link)
	fifo := filepath.Join(dir, "p")
	syscall.Mkfifo(fifo, 0o600)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 1001), 0o600)
	cases := []struct {
		name  string
		files []Source
		opts  *CreateOptions
		code  fault.Code
	}{
		{"ok", []Source{{"f", file}}, nil, ""},
		{"symlink source", []Source{{"l", link}}, nil, fault.Denied},
		{"FIFO source", []Source{{"p", fifo}}, nil, fault.InvalidInput},
		{"directory source", []Source{{"d", dir}}, nil, fault.InvalidInput},
		{"missing source", []Source{{"m", filepath.Join(dir, "missing")}}, nil, fault.NotFound},
		{"relative source", []Source{{"f", "f"}}, nil, fault.InvalidInput},
		{"unsafe name", []Source{{"../f", file}}, nil, fault.InvalidInput},
		{"colliding names", []Source{{"F", file}, {"f", file}}, nil, fault.InvalidInput},
		{"files past limit", []Source{{"a", file}, {"b", file}}, &CreateOptions{Limits: Limits{MaxFiles: 1}}, fault.Limit},
		{"member at limit", []Source{{"big", big}}, &CreateOptions{Limits: Limits{MaxMemberBytes: 1001}}, ""},
		{"member past limit", []Source{{"big", big}}, &CreateOptions{Limits: Limits{MaxMemberBytes: 1000}}, fault.Limit},
		{"total past limit", []Source{{"a", big}, {"b", file}}, &CreateOptions{Limits: Limits{MaxTotalBytes: 1004}}, fault.Limit},
		{"total at limit", []Source{{"a", big}, {"b", file}}, &CreateOptions{Limits: Limits{MaxTotalBytes: 1005}}, ""},
		{"central directory past limit", []Source{{"a", file}}, &CreateOptions{Limits: Limits{MaxCentralDirectoryBytes: 46 + 1 + 9 - 1}}, fault.Limit},
		{"central directory at limit", []Source{{"a", file}}, &CreateOptions{Limits: Limits{MaxCentralDirectoryBytes: 46 + 1 + 9}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			parent := t.TempDir()
			_, err := Create(ctx, filepath.Join(parent, "out.zip"), c.files, c.opts)
			wantFault(t, err, c.code, nil)
			if want := map[bool]int{true: 1, false: 0}[c.code == ""]; len(entries(t, parent)) != want {
				t.Fatalf("parent holds %v", entries(t, parent))
			}
		})
	}
}

func TestCopyMemberDetectsChange(t *testing.T) {
	for _, c := range []struct {
		name, after string
	}{
		{"grown", "before and after"},
		{"shrunk", "bef"},
		{"rewritten in place", "BEFORE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			os.WriteFile(p, []byte("before"), 0o600)
			f, err := fileio.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			// Same inode, new content; the change time moves even when
			// the size does not.
			time.Sleep(10 * time.Millisecond)
			os.WriteFile(p, []byte(c.after), 0o600)
			_, err = copyMember(context.Background(), discard{}, f, "f", &meter{max: 1 << 20})
			wantFault(t, err, fault.Integrity, ErrChanged)
			var me *MemberError
			if !errors.As(err, &me) || me.Name != "f" {
				t.Fatalf("%v names no member", err)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func TestBudgetReader(t *testing.T) {
	b := &budgetReader{r: strings.NewReader("0123456789")}
	b.budget.Store(6)
	b.armed.Store(true)
	buf := make([]byte, 4)
	if _, err := b.ReadAt(buf, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadAt(buf, 4); err != errBudget {
		t.Fatalf("second read: %v, want errBudget", err)
	}
	b.armed.Store(false)
	if _, err := b.ReadAt(buf, 4); err != nil {
		t.Fatalf("disarmed read: %v", err)
	}
}
