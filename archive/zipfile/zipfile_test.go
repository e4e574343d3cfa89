package zipfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

func sum(b []byte) Digest { return sha256.Sum256(b) }

// writeArchive stores data as an archive in a directory of its own.
func writeArchive(t testing.TB, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "in.zip")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// entries lists a directory's names.
func entries(t testing.TB, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range des {
		out = append(out, d.Name())
	}
	return out
}

func wantFault(t testing.TB, err error, code fault.Code, sentinel error) {
	t.Helper()
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("code %q, want %q (%v)", got, code, err)
	}
	if sentinel != nil && !errors.Is(err, sentinel) {
		t.Fatalf("error %v is not %v", err, sentinel)
	}
}

func TestCreateExtractRoundTrip(t *testing.T) {
	src := t.TempDir()
	files := map[string][]byte{
		"a.txt":          []byte("alpha\n"),
		"dir/b.bin":      bytes.Repeat([]byte{0, 1, 2, 3}, 50_000),
		"dir/sub/c.json": []byte(`{"x":1}`),
		"empty":          nil,
		"é/ü.txt":        []byte("unicode"),
	}
	var sources []Source
	for name, data := range files {
		p := filepath.Join(src, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sources = append(sources, Source{Name: name, Path: p})
	}
	for _, store := range []bool{false, true} {
		out := filepath.Join(t.TempDir(), "out.zip")
		created, err := Create(context.Background(), out, sources, &CreateOptions{Store: store})
		if err != nil {
			t.Fatal(err)
		}
		if created.Files != len(files) || created.Bytes == 0 {
			t.Fatalf("created %+v", created)
		}
		if st, _ := os.Stat(out); st.Mode().Perm() != 0o600 {
			t.Errorf("archive mode %v, want 0600", st.Mode())
		}
		expect, err := ParseManifest(strings.NewReader(created.Manifest()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Create(context.Background(), out, sources, nil); fault.CodeOf(err) != fault.Conflict {
			t.Fatalf("second create: %v, want conflict", err)
		}
		l, err := List(context.Background(), out, nil)
		if err != nil || len(l.Entries) != len(files) {
			t.Fatalf("list: %v %+v", err, l)
		}
		v, err := Verify(context.Background(), out, expect, nil)
		if err != nil || v.Files != len(files) {
			t.Fatalf("verify: %v %+v", err, v)
		}
		dest := filepath.Join(t.TempDir(), "x")
		var last int64
		res, err := Extract(context.Background(), out, dest, expect, &ExtractOptions{Progress: func(done, total int64) { last = done }})
		if err != nil {
			t.Fatal(err)
		}
		if res.Files != len(files) || last != res.Bytes {
			t.Fatalf("extracted %+v, progress %d", res, last)
		}
		for name, data := range files {
			got, err := os.ReadFile(filepath.Join(dest, filepath.FromSlash(name)))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if st, _ := os.Stat(dest); st.Mode().Perm() != 0o700 {
			t.Errorf("dest mode %v, want 0700", st.Mode())
		}
		if got := entries(t, filepath.Dir(dest)); len(got) != 1 {
			t.Errorf("parent holds %v, want only the destination", got)
		}
		if _, err := Extract(context.Background(), out, dest, expect, nil); fault.CodeOf(err) != fault.Conflict {
			t.Fatalf("extract onto existing: %v, want conflict", err)
		}
	}
}

func TestCheckName(t *testing.T) {
	deep := strings.Repeat("d/", limits.ZipMaxPathDepth-1) + "f"
	long := strings.Repeat(strings.Repeat("n", 200)+"/", 20) + strings.Repeat("z", limits.PathMaxBytes-20*201)
	cases := []struct {
		name string
		code fault.Code
	}{
		{"a.txt", ""},
		{"dir/sub/file", ""},
		{"..a/b..", ""},
		{"é", ""},
		{deep, ""},
		{deep + "/g", fault.Limit},
		{long, ""},
		{long + "x", fault.Limit},
		{"", fault.InvalidInput},
		{"../evil", fault.InvalidInput},
		{"a/../../evil", fault.InvalidInput},
		{"a/./b", fault.InvalidInput},
		{"/etc/passwd", fault.InvalidInput},
		{"a//b", fault.InvalidInput},
		{`..\evil`, fault.InvalidInput},
		{`a\b`, fault.InvalidInput},
		{"C:/x", fault.InvalidInput},
		{"c:x", fault.InvalidInput},
		{"a\x00b", fault.InvalidInput},
		{"a\nb", fault.InvalidInput},
		{"a\u0085b", fault.InvalidInput},
		{"\xff", fault.InvalidInput},
		{strings.Repeat("x", 256), fault.InvalidInput},
		{strings.Repeat("x", 255), ""},
	}
	for i, c := range cases {
		t.Run(fmt.Sprintf("%d:%.24q", i, c.name), func(t *testing.T) {
			var err error
			if ferr := checkName(c.name, limits.ZipMaxPathDepth); ferr != nil {
				err = ferr
			}
			if got := fault.CodeOf(err); err == nil && c.code != "" || err != nil && got != c.code {
				t.Fatalf("code %q, want %q (%v)", got, c.code, err)
			}
			if err != nil && !errors.Is(err, ErrUnsafeName) {
				t.Fatalf("%v is not ErrUnsafeName", err)
			}
		})
	}
}

func TestNameCollisions(t *testing.T) {
	cases := []struct {
		name  string
		names []string // a trailing "/" marks a directory
		dup   bool
	}{
		{"distinct", []string{"a", "b", "c/d", "c/e"}, false},
		{"exact", []string{"a.txt", "a.txt"}, true},
		{"case", []string{"README", "readme"}, true},
		{"case in a directory", []string{"Dir/a", "dir/b", "DIR/a"}, true},
		{"NFC and NFD", []string{"caf\u00e9", "cafe\u0301"}, true},
		{"sharp s folds to ss", []string{"stra\u00dfe", "STRASSE"}, true},
		{"kelvin sign", []string{"\u212a", "k"}, true},
		{"file then directory", []string{"a", "a/b"}, true},
		{"directory then file", []string{"a/b", "a"}, true},
		{"file then directory member", []string{"a", "a/"}, true},
		{"directory member twice", []string{"a/", "a/"}, true},
		{"directory member and its files", []string{"a/", "a/b", "a/c/"}, false},
		{"implicit then explicit directory", []string{"a/b", "a/"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newNameSet()
			var err error
			for _, n := range c.names {
				name, dir := splitDir(n)
				if ferr := s.add(name, dir); ferr != nil {
					err = ferr
					break
				}
			}
			if (err != nil) != c.dup {
				t.Fatalf("err = %v, want dup=%v", err, c.dup)
			}
			if err != nil && !errors.Is(err, ErrDuplicateName) {
				t.Fatalf("%v is not ErrDuplicateName", err)
			}
		})
	}
}

func TestLimitsResolve(t *testing.T) {
	l, err := Limits{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	want := Limits{limits.ZipMaxFiles, limits.ZipMaxMemberBytes, limits.ZipMaxTotalBytes, limits.ZipMaxCentralDirectory, limits.ZipMaxPathDepth}
	if l != want {
		t.Fatalf("defaults %+v, want %+v", l, want)
	}
	for _, bad := range []Limits{
		{MaxFiles: limits.ZipMaxFiles + 1}, {MaxMemberBytes: limits.ZipMaxMemberBytes + 1},
		{MaxTotalBytes: limits.ZipMaxTotalBytes + 1}, {MaxCentralDirectoryBytes: limits.ZipMaxCentralDirectory + 1},
		{MaxPathDepth: limits.ZipMaxPathDepth + 1}, {MaxFiles: -1},
	} {
		if _, err := bad.resolve(); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%+v: %v, want invalid_input", bad, err)
		}
	}
	if l, err := (Limits{MaxFiles: limits.ZipMaxFiles, MaxPathDepth: 3}).resolve(); err != nil || l.MaxFiles != limits.ZipMaxFiles || l.MaxPathDepth != 3 {
		t.Fatalf("%+v %v", l, err)
	}
}

// hostile is an archive that must be refused.
type hostile struct {
	name     string
	archive  rawArchive
	expect   Expect
	opts     *ExtractOptions
	code     fault.Code
	sentinel error
}

func hostileCases() []hostile {
	ok := []byte("ok")
	one := func(m rawMember) rawArchive { return rawArchive{members: []rawMember{m}} }
	exp := func(names ...string) Expect {
		e := Expect{}
		for _, n := range names {
			e[n] = sum(ok)
		}
		return e
	}
	symlink := stored("link", []byte("/etc/passwd"))
	symlink.ext = unixAttrs(fs.ModeSymlink | 0o777)
	fifo := stored("fifo", nil)
	fifo.ext = unixAttrs(fs.ModeNamedPipe | 0o644)
	dev := stored("dev", nil)
	dev.ext = unixAttrs(fs.ModeDevice | 0o644)
	dosDir := stored("notadir", ok)
	dosDir.made, dosDir.ext = 0, 0x10 // MS-DOS directory attribute on a file name
	enc := stored("secret.txt", ok)
	enc.flags |= 1
	strong := stored("secret.txt", ok)
	strong.flags |= 0x40
	bz := stored("a.bin", ok)
	bz.method = 12
	bomb := rawMember{name: "bomb", method: 8, data: deflatedZeros(1 << 20), usize: 10 << 30, crc: 0, made: unixHost | 20, ext: unixAttrs(0o644)}
	liar := rawMember{name: "liar", method: 8, data: deflatedZeros(16 << 20), usize: 1024, crc: crcZeros(1024), made: unixHost | 20, ext: unixAttrs(0o644)}
	short := stored("short", []byte("abc"))
	short.usize = 10
	badCRC := stored("a", ok)
	badCRC.crc ^= 1
	corrupt := deflated("a", bytes.Repeat(ok, 1000))
	corrupt.data = append([]byte{0xff, 0xff}, corrupt.data[2:]...)
	overlap := rawArchive{members: []rawMember{stored("a", ok), stored("b", ok)}}
	overlap.members[1].sameAs = 1
	many := func(n int) rawArchive {
		var a rawArchive
		for i := range n {
			a.members = append(a.members, stored(strings.Repeat("x", 8)+strconv.Itoa(i), nil))
		}
		return a
	}
	manyExp := func(n int) Expect {
		e := Expect{}
		for i := range n {
			e[strings.Repeat("x", 8)+strconv.Itoa(i)] = sum(nil)
		}
		return e
	}
	understated := many(limits.ZipMaxFiles)
	understated.extraHeaders = 1 // 10,001 headers where the end record counts 10,000
	n10001 := uint16(limits.ZipMaxFiles + 1)
	hugeCD := uint32(limits.ZipMaxCentralDirectory + 1)
	prefixed := one(stored("a", ok))
	prefixed.prefix = []byte("#!/bin/sh\nexit 0\n")
	return []hostile{
		{"zip slip", one(stored("../evil.txt", ok)), exp("../evil.txt"), nil, fault.InvalidInput, ErrUnsafeName},
		{"zip slip deep", one(stored("a/../../evil.txt", ok)), exp("evil.txt"), nil, fault.InvalidInput, ErrUnsafeName},
		{"absolute name", one(stored("/tmp/evil.txt", ok)), exp("tmp/evil.txt"), nil, fault.InvalidInput, ErrUnsafeName},
		{"backslash slip", one(stored(`..\evil.txt`, ok)), exp("evil.txt"), nil, fault.InvalidInput, ErrUnsafeName},
		{"drive letter", one(stored("C:/evil.txt", ok)), exp("evil.txt"), nil, fault.InvalidInput, ErrUnsafeName},
		{"NUL in name", one(stored("a\x00.txt", ok)), exp("a"), nil, fault.InvalidInput, ErrUnsafeName},
		{"symlink member", one(symlink), Expect{"link": sum([]byte("/etc/passwd"))}, nil, fault.InvalidInput, ErrSpecialFile},
		{"fifo member", one(fifo), Expect{"fifo": sum(nil)}, nil, fault.InvalidInput, ErrSpecialFile},
		{"device member", one(dev), Expect{"dev": sum(nil)}, nil, fault.InvalidInput, ErrSpecialFile},
		{"directory attribute on a file", one(dosDir), exp("notadir"), nil, fault.InvalidInput, ErrSpecialFile},
		{"encrypted member", one(enc), exp("secret.txt"), nil, fault.InvalidInput, ErrEncrypted},
		{"strongly encrypted member", one(strong), exp("secret.txt"), nil, fault.InvalidInput, ErrEncrypted},
		{"unsupported method", one(bz), exp("a.bin"), nil, fault.InvalidInput, ErrMethod},
		{"10 GiB declared bomb", one(bomb), Expect{"bomb": {}}, nil, fault.Limit, ErrSize},
		{"stream larger than declared", one(liar), Expect{"liar": {}}, nil, fault.Integrity, ErrSize},
		{"stream shorter than declared", one(short), Expect{"short": sum([]byte("abc"))}, nil, fault.Integrity, ErrSize},
		{"bad CRC", one(badCRC), exp("a"), nil, fault.Integrity, ErrDigest},
		{"corrupt deflate stream", one(corrupt), Expect{"a": sum(bytes.Repeat(ok, 1000))}, nil, fault.Integrity, nil},
		{"duplicate names", rawArchive{members: []rawMember{stored("a.txt", ok), stored("a.txt", ok)}}, exp("a.txt"), nil, fault.InvalidInput, ErrDuplicateName},
		{"case-colliding names", rawArchive{members: []rawMember{stored("README", ok), stored("readme", ok)}}, exp("README", "readme"), nil, fault.InvalidInput, ErrDuplicateName},
		{"normalisation-colliding names", rawArchive{members: []rawMember{stored("caf\u00e9", ok), stored("cafe\u0301", ok)}}, exp("caf\u00e9"), nil, fault.InvalidInput, ErrDuplicateName},
		{"file and directory of one name", rawArchive{members: []rawMember{stored("a", ok), stored("a/b", ok)}}, exp("a", "b"), nil, fault.InvalidInput, ErrDuplicateName},
		{"overlapping members", overlap, exp("a", "b"), nil, fault.InvalidInput, ErrOverlap},
		{"10,001 members", func() rawArchive { a := many(limits.ZipMaxFiles + 1); a.records = &n10001; return a }(), manyExp(limits.ZipMaxFiles), nil, fault.Limit, nil},
		{"10,001 members, 10,000 declared", understated, manyExp(limits.ZipMaxFiles), nil, fault.InvalidInput, ErrMalformed},
		{"central directory over 4 MiB declared", func() rawArchive { a := one(stored("a", ok)); a.cdSize = &hugeCD; return a }(), exp("a"), nil, fault.Limit, nil},
		{"prefixed archive", prefixed, exp("a"), nil, fault.InvalidInput, ErrMalformed},
		{"unexpected member", rawArchive{members: []rawMember{stored("a", ok), stored("extra", ok)}}, exp("a"), nil, fault.Integrity, ErrUnexpectedMember},
		{"unexpected directory member", rawArchive{members: []rawMember{stored("a", ok), stored("d/", nil)}}, exp("a"), nil, fault.Integrity, ErrUnexpectedMember},
		{"missing member", one(stored("a", ok)), exp("a", "b"), nil, fault.Integrity, ErrMissingMember},
		{"digest mismatch", one(stored("a", ok)), Expect{"a": sum([]byte("other"))}, nil, fault.Integrity, ErrDigest},
		{"expectation with unsafe name", one(stored("a", ok)), exp("a", "../b"), nil, fault.InvalidInput, ErrUnsafeName},
		{"expectation with colliding names", one(stored("a", ok)), exp("a", "A"), nil, fault.InvalidInput, ErrDuplicateName},
	}
}

// TestHostileArchives refuses each archive in bounded memory, writing
// nothing: the destination's parent is empty afterwards.
func TestHostileArchives(t *testing.T) {
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			archive := writeArchive(t, c.archive.bytes())
			parent := t.TempDir()
			dest := filepath.Join(parent, "out")
			var err error
			alloc := testkit.Allocated(func() { _, err = Extract(context.Background(), archive, dest, c.expect, c.opts) })
			wantFault(t, err, c.code, c.sentinel)
			if got := entries(t, parent); len(got) != 0 {
				t.Fatalf("parent holds %v after a refusal", got)
			}
			if alloc > 64<<20 {
				t.Fatalf("allocated %d bytes refusing it", alloc)
			}
			// Verify refuses it the same way, and List wherever the
			// refusal is structural.
			_, verr := Verify(context.Background(), archive, c.expect, nil)
			if c.opts == nil && fault.CodeOf(verr) != c.code {
				t.Fatalf("verify: %v, want %s", verr, c.code)
			}
		})
	}
}
