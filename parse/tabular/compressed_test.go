package tabular

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"reflect"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
)

func gzipped(t testing.TB, level int, parts ...[]byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, level)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if _, err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

type member struct {
	name    string
	data    []byte
	method  uint16
	dir     bool
	symlink bool
}

func zipped(t testing.TB, comment string, members ...member) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for _, m := range members {
		h := &zip.FileHeader{Name: m.name, Method: m.method}
		switch {
		case m.dir:
			h.Name += "/"
		case m.symlink:
			h.SetMode(0o777 | 1<<27) // fs.ModeSymlink
		}
		f, err := w.CreateHeader(h)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(m.data); err != nil {
			t.Fatal(err)
		}
	}
	if comment != "" {
		if err := w.SetComment(comment); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestCompressed(t *testing.T) {
	csvText := fixture(t, "comma.csv")
	gz := gzipped(t, gzip.BestCompression, csvText)
	corrupt := bytes.Clone(gz)
	corrupt[len(corrupt)-5] ^= 0xff // the CRC-32 in the trailer
	zipCRC := zipped(t, "", member{name: "a.csv", data: csvText, method: zip.Store})
	zipCRC[bytes.Index(zipCRC, []byte("1,Ann"))] = '9' // content no longer matches its CRC
	want := [][]string{{"Ann"}, {"Bob"}, {"Cy"}}
	cases := []struct {
		name   string
		data   []byte
		format Format
		code   fault.Code
		msg    string
		member string
	}{
		{name: "gzip", data: gz},
		{name: "gzip explicit", data: gz, format: FormatGzip},
		{name: "gzip multistream", data: append(gzipped(t, 1, []byte("id,name,state\n1,Ann,CA\n")), gzipped(t, 1, []byte("2,Bob,NY\n3,Cy,CA\n"))...)},
		{name: "zip deflate", data: zipped(t, "", member{name: "people.csv", data: csvText, method: zip.Deflate}), member: "people.csv"},
		{name: "zip store with directory", data: zipped(t, "", member{name: "dir", dir: true}, member{name: "dir/people.csv", data: csvText, method: zip.Store}), member: "dir/people.csv"},
		{name: "zip two csvs", data: zipped(t, "", member{name: "a.csv", data: csvText}, member{name: "b.csv", data: csvText}), code: fault.InvalidInput, msg: `holds 2 files "a.csv", "b.csv"; exactly one CSV`},
		{name: "zip empty", data: zipped(t, ""), code: fault.InvalidInput, msg: "holds 0 files"},
		{name: "zip symlink", data: zipped(t, "", member{name: "a.csv", data: []byte("/etc/passwd"), symlink: true}), code: fault.InvalidInput, msg: "not a regular file"},
		{name: "zip crc mismatch", data: zipCRC, code: fault.Integrity},
		{name: "gzip crc mismatch", data: corrupt, code: fault.Integrity},
		{name: "gzip truncated", data: gz[:len(gz)-10], code: fault.InvalidInput, msg: "truncated"},
		{name: "gzip trailing garbage", data: append(bytes.Clone(gz), "garbage"...), code: fault.InvalidInput},
		{name: "not gzip but said so", data: csvText, format: FormatGzip, code: fault.InvalidInput, msg: "not a valid gzip"},
		{name: "gzip but said csv", data: gz, format: FormatCSV, code: fault.InvalidInput, msg: "gzip-compressed but format csv"},
		{name: "truncated zip", data: []byte("PK\x03\x04garbage"), code: fault.InvalidInput, msg: "not a valid ZIP"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := Scan(bg, c.data, &Options{Format: c.format, Columns: []string{"name"}})
			if fault.CodeOf(err) != c.code {
				t.Fatalf("err %v, want code %q", err, c.code)
			}
			if err != nil {
				if !strings.Contains(err.Error(), c.msg) {
					t.Fatalf("message %q lacks %q", err, c.msg)
				}
				return
			}
			if !reflect.DeepEqual(res.Rows, want) || res.Member != c.member || res.ExpandedBytes != int64(len(csvText)) {
				t.Fatalf("got %+v", res)
			}
		})
	}
}

func TestZipEntryCount(t *testing.T) {
	csvText := []byte("a\n1\n")
	many := func(n int) []byte {
		ms := []member{{name: "x.csv", data: csvText}}
		for i := 1; i < n; i++ {
			ms = append(ms, member{name: "d" + strings.Repeat("x", i), dir: true})
		}
		return zipped(t, "", ms...)
	}
	if n, ok := zipEntryCount(many(64)); !ok || n != 64 {
		t.Fatalf("count %d %v", n, ok)
	}
	if _, err := Scan(bg, many(64), nil); err != nil {
		t.Fatalf("64 entries: %v", err)
	}
	if _, err := Scan(bg, many(65), nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("65 entries: %v", err)
	}
	if _, ok := zipEntryCount([]byte("PK\x03\x04")); ok {
		t.Fatal("found a record in a stub")
	}
}
