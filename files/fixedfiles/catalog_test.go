package fixedfiles

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func newBuilder(t *testing.T, opts *Options) *Builder {
	t.Helper()
	b, err := NewBuilder(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func build(t *testing.T, b *Builder) *Catalog {
	t.Helper()
	c, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// wantFault checks the code and the wrapped sentinel of err.
func wantFault(t *testing.T, err error, code fault.Code, sentinel error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got success, want %s", code)
	}
	if fault.CodeOf(err) != code {
		t.Fatalf("code %s, want %s: %v", fault.CodeOf(err), code, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("error %v does not wrap %v", err, sentinel)
	}
}

func TestOptions(t *testing.T) {
	cases := []struct {
		name    string
		opts    *Options
		entries int
		bytes   int64
		ok      bool
	}{
		{"nil is default", nil, 64, 64 * limits.KiB, true},
		{"zero is default", &Options{}, 64, 64 * limits.KiB, true},
		{"at hard limits", &Options{MaxEntries: 1024, MaxFileBytes: 4 * limits.MiB}, 1024, 4 * limits.MiB, true},
		{"entries past hard", &Options{MaxEntries: 1025}, 0, 0, false},
		{"bytes past hard", &Options{MaxFileBytes: 4*limits.MiB + 1}, 0, 0, false},
		{"negative entries", &Options{MaxEntries: -1}, 0, 0, false},
		{"negative bytes", &Options{MaxFileBytes: -1}, 0, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := NewBuilder(c.opts)
			if !c.ok {
				wantFault(t, err, fault.InvalidInput, ErrLimits)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			cat, _ := b.Build()
			if got := cat.Limits(); got.MaxEntries != c.entries || got.MaxFileBytes != c.bytes {
				t.Fatalf("limits %+v", got)
			}
		})
	}
}

func TestInsertPathRefusals(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	ok := writeFile(t, dir, "ok.txt", []byte("hello"))
	cases := []struct {
		name     string
		id, path string
		code     fault.Code
		sentinel error
	}{
		{"directory", "d", sub, fault.InvalidInput, ErrNotRegular},
		{"fifo", "f", fifo, fault.InvalidInput, ErrNotRegular},
		{"device", "dev", "/dev/null", fault.InvalidInput, ErrNotRegular},
		{"missing", "m", filepath.Join(dir, "missing"), fault.NotFound, nil},
		{"invalid id", "../ok", ok, fault.InvalidInput, ErrInvalidID},
		{"upper-case id", "OK", ok, fault.InvalidInput, ErrInvalidID},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, nil)
			done := make(chan error, 1)
			go func() { done <- b.InsertPath(c.id, c.path) }()
			select {
			case err := <-done:
				wantFault(t, err, c.code, c.sentinel)
			case <-time.After(5 * time.Second):
				t.Fatal("insert hung")
			}
			if b.Len() != 0 {
				t.Fatal("a refused entry was added")
			}
		})
	}
}

func TestInsertOpenRefusesFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(fifo, os.O_RDWR|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := newBuilder(t, nil)
	wantFault(t, b.InsertOpen("f", f), fault.InvalidInput, ErrNotRegular)
	wantFault(t, b.InsertOpen("n", nil), fault.InvalidInput, nil)

	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	wantFault(t, b.InsertOpen("d", d), fault.InvalidInput, ErrNotRegular)
}

func TestDuplicateRefused(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a", []byte("a"))
	b := newBuilder(t, nil)
	if err := b.InsertPath("a", p); err != nil {
		t.Fatal(err)
	}
	wantFault(t, b.InsertPath("a", p), fault.Conflict, ErrDuplicate)
}

func TestEntryLimit(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a", []byte("a"))
	for _, c := range []struct {
		name string
		opts *Options
		max  int
	}{
		{"default", nil, limits.CatalogDefaultEntries},
		{"hard", &Options{MaxEntries: limits.CatalogHardEntries}, limits.CatalogHardEntries},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder(t, c.opts)
			for i := range c.max {
				if err := b.InsertPath(fmt.Sprintf("e%d", i), p); err != nil {
					t.Fatalf("entry %d: %v", i+1, err)
				}
			}
			wantFault(t, b.InsertPath("one-too-many", p), fault.Limit, ErrFull)
			if b.Len() != c.max {
				t.Fatalf("len %d", b.Len())
			}
		})
	}
}

func TestFileSizeLimit(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		opts *Options
		max  int64
	}{
		{"default", nil, limits.CatalogDefaultFileBytes},
		{"hard", &Options{MaxFileBytes: limits.CatalogHardFileBytes}, limits.CatalogHardFileBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			atLimit := writeFile(t, dir, c.name+"-at", bytes.Repeat([]byte("x"), int(c.max)))
			over := writeFile(t, dir, c.name+"-over", bytes.Repeat([]byte("x"), int(c.max)+1))
			b := newBuilder(t, c.opts)
			if err := b.InsertPath("at", atLimit); err != nil {
				t.Fatal(err)
			}
			wantFault(t, b.InsertPath("over", over), fault.Limit, ErrTooLarge)
			cat := build(t, b)
			data, err := cat.Read("at")
			if err != nil || int64(len(data)) != c.max {
				t.Fatalf("read %d bytes, %v", len(data), err)
			}
			// The file grows past the limit after insert: the read fails
			// whole, it is not cut to the limit.
			if err := os.WriteFile(atLimit, bytes.Repeat([]byte("y"), int(c.max)+1), 0o644); err != nil {
				t.Fatal(err)
			}
			data, err = cat.Read("at")
			wantFault(t, err, fault.Limit, ErrTooLarge)
			if data != nil {
				t.Fatal("partial data returned")
			}
		})
	}
}

func TestReadWholeAndPinned(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "notes.txt", []byte("original\n"))
	link := filepath.Join(dir, "link")
	if err := os.Symlink(p, link); err != nil {
		t.Fatal(err)
	}
	b := newBuilder(t, nil)
	if err := b.InsertPath("notes", p); err != nil {
		t.Fatal(err)
	}
	if err := b.InsertPath("via-link", link); err != nil {
		t.Fatal(err)
	}
	cat := build(t, b)

	// Swap: a new file renamed over the path, and the symlink pointed
	// elsewhere. Both entries still read the file opened at insert.
	other := writeFile(t, dir, "other.txt", []byte("attacker\n"))
	if err := os.Rename(writeFile(t, dir, "new.txt", []byte("replaced\n")), p); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(link); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(other, link); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"notes", "via-link"} {
		got, err := cat.Read(id)
		if err != nil || string(got) != "original\n" {
			t.Fatalf("%s: %q %v", id, got, err)
		}
	}
}

func TestReadFollowsContentInPlace(t *testing.T) {
	// Identity is pinned, content is not: an in-place write is seen,
	// including growth since the size was last known.
	dir := t.TempDir()
	p := writeFile(t, dir, "a", []byte("v1"))
	b := newBuilder(t, nil)
	if err := b.InsertPath("a", p); err != nil {
		t.Fatal(err)
	}
	cat := build(t, b)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(" and more")
	f.Close()
	got, err := cat.Read("a")
	if err != nil || string(got) != "v1 and more" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestReadFailures(t *testing.T) {
	dir := t.TempDir()
	b := newBuilder(t, nil)
	if err := b.InsertPath("bad", writeFile(t, dir, "bad", []byte("ok\xff\xfe"))); err != nil {
		t.Fatal(err)
	}
	closed, err := os.Open(writeFile(t, dir, "c", []byte("c")))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.InsertOpen("closed", closed); err != nil {
		t.Fatal(err)
	}
	closed.Close()
	cat := build(t, b)

	_, err = cat.Read("bad")
	wantFault(t, err, fault.Integrity, ErrNotUTF8)
	if !strings.Contains(err.Error(), "offset 2") {
		t.Fatalf("host detail lacks the offset: %v", err)
	}
	_, err = cat.Read("unknown")
	wantFault(t, err, fault.NotFound, ErrUnknownID)
	_, err = cat.Read("../bad")
	wantFault(t, err, fault.InvalidInput, ErrInvalidID)
	_, err = cat.Read("closed")
	wantFault(t, err, fault.IO, nil)
	if !strings.Contains(err.Error(), filepath.Join(dir, "c")) {
		t.Fatalf("host detail lacks the path: %v", err)
	}
}

func TestCloseThenRead(t *testing.T) {
	dir := t.TempDir()
	b := newBuilder(t, nil)
	if err := b.InsertPath("a", writeFile(t, dir, "a", []byte("a"))); err != nil {
		t.Fatal(err)
	}
	cat := build(t, b)
	if err := cat.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := cat.Read("a")
	wantFault(t, err, fault.IO, ErrClosed)
}

func TestBuilderClosedAfterBuild(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a", []byte("a"))
	b := newBuilder(t, nil)
	if err := b.InsertPath("a", p); err != nil {
		t.Fatal(err)
	}
	cat := build(t, b)
	wantFault(t, b.InsertPath("b", p), fault.Conflict, ErrBuilt)
	f, _ := os.Open(p)
	defer f.Close()
	wantFault(t, b.InsertOpen("c", f), fault.Conflict, ErrBuilt)
	_, err := b.Build()
	wantFault(t, err, fault.Conflict, ErrBuilt)
	if got := cat.IDs(); len(got) != 1 || got[0] != "a" {
		t.Fatalf("catalog changed: %v", got)
	}

	// The compile-time half: a Catalog has no method that adds entries.
	var methods []string
	ct := reflect.TypeFor[*Catalog]()
	for i := range ct.NumMethod() {
		methods = append(methods, ct.Method(i).Name)
	}
	if want := []string{"Close", "IDs", "Len", "Limits", "Read"}; !reflect.DeepEqual(methods, want) {
		t.Fatalf("Catalog methods %v, want exactly %v: a new method must not mutate entries", methods, want)
	}
}

func TestConcurrentReads(t *testing.T) {
	dir := t.TempDir()
	b := newBuilder(t, nil)
	want := map[string][]byte{}
	for i := range 4 {
		id := fmt.Sprintf("e%d", i)
		want[id] = bytes.Repeat([]byte{'a' + byte(i)}, 1000*(i+1))
		if err := b.InsertPath(id, writeFile(t, dir, id, want[id])); err != nil {
			t.Fatal(err)
		}
	}
	cat := build(t, b)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				id := fmt.Sprintf("e%d", (g+i)%4)
				got, err := cat.Read(id)
				if err != nil || !bytes.Equal(got, want[id]) {
					t.Errorf("%s: %d bytes, %v", id, len(got), err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestBuilderCloseReleasesFiles(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Open(writeFile(t, dir, "a", []byte("a")))
	if err != nil {
		t.Fatal(err)
	}
	b := newBuilder(t, nil)
	if err := b.InsertOpen("a", f); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Stat(); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("file still open: %v", err)
	}
}

func TestReadRefusesGrowthDuringRead(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "a", []byte("v1"))
	b := newBuilder(t, nil)
	if err := b.InsertPath("a", p); err != nil {
		t.Fatal(err)
	}
	cat := build(t, b)
	testHookAfterStat = func() {
		f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
		f.WriteString("+")
		f.Close()
	}
	defer func() { testHookAfterStat = nil }()
	got, err := cat.Read("a")
	wantFault(t, err, fault.Integrity, ErrChanged)
	if got != nil {
		t.Fatalf("partial data %q", got)
	}
}
