package tabular

import (
	"archive/zip"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

func discard(data []byte, opts *Options) (*Summary, error) {
	return ScanFunc(bg, data, opts, func([]string) error { return nil })
}

var kibRow = append(bytes.Repeat([]byte("x"), 1023), '\n')

// kibRows returns a CSV of exactly size bytes: header "a", then rows of
// 1 KiB, then one shorter (or, to avoid a blank line, one longer) row.
func kibRows(size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, "a\n"...)
	b = append(b, bytes.Repeat(kibRow, (size-len(b))/len(kibRow))...)
	return appendTail(b, size-len(b))
}

func appendTail(b []byte, n int) []byte {
	switch n {
	case 0:
		return b
	case 1:
		b[len(b)-1] = 'x'
		return append(b, '\n')
	}
	return append(append(b, bytes.Repeat([]byte("x"), n-1)...), '\n')
}

// gzipRows is kibRows(size) compressed as concatenated gzip members (one
// per MiB, all alike), which gzip readers read as one stream: cheap to
// build however large it expands.
func gzipRows(t testing.TB, size int) []byte {
	block := bytes.Repeat(kibRow, 1024)
	out := gzipped(t, gzip.BestCompression, []byte("a\n"))
	left := size - 2
	out = append(out, bytes.Repeat(gzipped(t, gzip.BestCompression, block), left/len(block))...)
	left %= len(block)
	tail := appendTail(bytes.Repeat(kibRow, left/len(kibRow)), left%len(kibRow))
	return append(out, gzipped(t, gzip.BestCompression, tail)...)
}

func TestExpandedLimitEdge(t *testing.T) {
	edge := kibRows(limits.TabularMaxExpandedBytes)
	if len(edge) != limits.TabularMaxExpandedBytes {
		t.Fatalf("fixture is %d bytes", len(edge))
	}
	sum, err := discard(edge, nil)
	if err != nil || sum.ExpandedBytes != limits.TabularMaxExpandedBytes {
		t.Fatalf("plain CSV at the bound: %v %+v", err, sum)
	}
	past := append(bytes.Clone(edge), 'x', '\n')[:limits.TabularMaxExpandedBytes+1]
	if _, err := discard(past, nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("plain CSV one past the bound: %v", err)
	}
	// Streaming: the same bounds apply to what a gzip expands to.
	gz := gzipRows(t, limits.TabularMaxExpandedBytes)
	if sum, err := discard(gz, nil); err != nil || sum.ExpandedBytes != limits.TabularMaxExpandedBytes {
		t.Fatalf("gzip expanding to the bound: %v %+v", err, sum)
	}
	_, err = discard(append(gz, gzipped(t, gzip.BestSpeed, []byte("x"))...), nil)
	if fault.CodeOf(err) != fault.Limit || !errors.Is(err, ErrExpandedTooLarge) {
		t.Fatalf("gzip expanding one past the bound: %v", err)
	}
}

// exactGzip compresses content (stored, so decompressing costs little
// more than a copy) and pads the gzip header with an extra field so the
// stream is exactly size bytes.
func exactGzip(t *testing.T, content []byte, size int) []byte {
	t.Helper()
	g := gzipped(t, gzip.NoCompression, content)
	pad := size - len(g) - 2 // the extra field's length takes two bytes
	if pad < 0 || pad > 0xffff {
		t.Fatalf("cannot pad %d bytes to %d", len(g), size)
	}
	out := make([]byte, 0, size)
	out = append(out, g[:10]...)
	out[3] |= 0x04 // FEXTRA
	out = binary.LittleEndian.AppendUint16(out, uint16(pad))
	out = append(out, bytes.Repeat([]byte("p"), pad)...)
	return append(out, g[10:]...)
}

// exactZip stores content in a ZIP padded by its comment to exactly size
// bytes.
func exactZip(t *testing.T, z []byte, size int) []byte {
	t.Helper()
	pad := size - len(z) // z has an empty comment: its last 2 bytes are the comment length
	if pad < 0 || pad > 0xffff {
		t.Fatalf("cannot pad %d bytes to %d", len(z), size)
	}
	out := append(bytes.Clone(z[:len(z)-2]), 0, 0)
	binary.LittleEndian.PutUint16(out[len(out)-2:], uint16(pad))
	return append(out, bytes.Repeat([]byte("c"), pad)...)
}

func TestCompressedLimitEdge(t *testing.T) {
	content := kibRows(limits.TabularMaxCompressedBytes - 64<<10)
	edge := exactGzip(t, content, limits.TabularMaxCompressedBytes)
	if _, err := discard(edge, nil); err != nil {
		t.Fatalf("gzip of exactly the compressed bound: %v", err)
	}
	past := exactGzip(t, content, limits.TabularMaxCompressedBytes+1)
	if _, err := discard(past, nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("gzip one past the compressed bound: %v", err)
	}
	// The same for a ZIP.
	z := zipped(t, "", member{name: "a.csv", data: content, method: zip.Store})
	if sum, err := discard(exactZip(t, z, limits.TabularMaxCompressedBytes), nil); err != nil || sum.Member != "a.csv" {
		t.Fatalf("zip of exactly the compressed bound: %v", err)
	}
	if _, err := discard(exactZip(t, z, limits.TabularMaxCompressedBytes+1), nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("zip one past the compressed bound: %v", err)
	}
}

func header(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = "c" + itoa(int64(i))
	}
	return strings.Join(names, ",")
}

func TestColumnLimitEdge(t *testing.T) {
	row := strings.TrimSuffix(strings.Repeat("v,", limits.TabularMaxColumns), ",")
	res, err := Scan(bg, []byte(header(limits.TabularMaxColumns)+"\n"+row+"\n"), &Options{Columns: []string{"c255"}})
	if err != nil || len(res.Header) != limits.TabularMaxColumns || res.Rows[0][0] != "v" {
		t.Fatalf("at the bound: %v %+v", err, res)
	}
	for _, n := range []int{limits.TabularMaxColumns + 1, 300} {
		if _, err := Scan(bg, []byte(header(n)+"\n"), nil); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "columns") {
			t.Fatalf("%d columns: %v", n, err)
		}
	}
}

func TestScanBudgetEdge(t *testing.T) {
	rows := func(n int) []byte {
		return append([]byte("a\n"), bytes.Repeat([]byte("1\n"), n)...)
	}
	sum, err := discard(rows(limits.TabularDefaultRows), nil)
	if err != nil || sum.Scanned != limits.TabularDefaultRows {
		t.Fatalf("default budget at the edge: %v", err)
	}
	past := rows(limits.TabularDefaultRows + 1)
	if _, err := discard(past, nil); fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "scan budget") {
		t.Fatalf("default budget one past: %v", err)
	}
	if sum, err := discard(past, &Options{MaxScanRows: limits.TabularDefaultRows + 1}); err != nil || sum.Scanned != limits.TabularDefaultRows+1 {
		t.Fatalf("explicit larger budget: %v", err)
	}
	small := rows(10)
	if _, err := discard(small, &Options{MaxScanRows: 10}); err != nil {
		t.Fatalf("explicit budget at the edge: %v", err)
	}
	if _, err := discard(small, &Options{MaxScanRows: 9}); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("explicit budget one past: %v", err)
	}
	if _, err := discard(small, &Options{MaxScanRows: limits.TabularHardRows}); err != nil {
		t.Fatalf("hard budget: %v", err)
	}
	if _, err := discard(small, &Options{MaxScanRows: limits.TabularHardRows + 1}); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("budget over the hard limit: %v", err)
	}
}

func TestRecordLimitEdge(t *testing.T) {
	record := func(size int) []byte { // header "a", then one row of size bytes with its newline
		return append(append([]byte("a\n"), bytes.Repeat([]byte("y"), size-1)...), '\n')
	}
	if _, err := discard(record(limits.TabularMaxRecordBytes), nil); err != nil {
		t.Fatalf("record at the bound: %v", err)
	}
	_, err := discard(record(limits.TabularMaxRecordBytes+1), nil)
	if fault.CodeOf(err) != fault.Limit || !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("record one past the bound: %v", err)
	}
	// A quoted field spanning many short lines is one record.
	quoted := append([]byte("a\n\""), bytes.Repeat(kibRow, limits.TabularMaxRecordBytes/len(kibRow)+1)...)
	if _, err := discard(append(quoted, '"', '\n'), nil); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("multi-line record past the bound: %v", err)
	}
}

// gzipBomb is a gzip stream expanding to head followed by 1 GiB of
// repeated chunk (1 MiB): 1,024 identical gzip members of the chunk,
// which gzip readers read as one stream. Each member is the chunk
// streamed through gzip, so the whole is a 1 GiB-expanding bomb of about
// 1 MiB for zeros, built in milliseconds.
func gzipBomb(t *testing.T, head, chunk []byte) []byte {
	t.Helper()
	if len(chunk) != 1<<20 {
		t.Fatalf("chunk of %d bytes", len(chunk))
	}
	return append(gzipped(t, gzip.BestCompression, head), bytes.Repeat(gzipped(t, gzip.BestCompression, chunk), 1024)...)
}

// TestGzipBombs: a gzip expanding to 1 GiB stops at a bound in bounded
// memory, whether it is one endless record or endless rows.
func TestGzipBombs(t *testing.T) {
	zeros := gzipBomb(t, []byte("a\n"), make([]byte, 1<<20))
	if len(zeros) > 2<<20 {
		t.Fatalf("bomb is %d bytes compressed", len(zeros))
	}
	var err error
	alloc := testkit.Allocated(func() { _, err = discard(zeros, nil) })
	if fault.CodeOf(err) != fault.Limit || !errors.Is(err, ErrRecordTooLarge) {
		t.Fatalf("zero bomb: %v", err)
	}
	t.Logf("zero bomb: %d bytes compressed, %d bytes allocated", len(zeros), alloc)
	if alloc > 96<<20 {
		t.Fatalf("zero bomb allocated %d bytes", alloc)
	}

	// 1 GiB of 1 KiB rows, all filtered out so nothing is kept.
	rows := gzipBomb(t, []byte("a\n"), bytes.Repeat(kibRow, 1024))
	if len(rows) > 8<<20 {
		t.Fatalf("row bomb is %d bytes compressed", len(rows))
	}
	opts := &Options{MaxScanRows: limits.TabularHardRows, Filter: []Condition{{Column: "a", Value: "never"}}}
	alloc = testkit.Allocated(func() { _, err = discard(rows, opts) })
	if fault.CodeOf(err) != fault.Limit || !errors.Is(err, ErrExpandedTooLarge) {
		t.Fatalf("row bomb: %v", err)
	}
	// Each row's string is allocated once (64 MiB in all) and freed; a
	// scan that expanded the whole GiB would allocate far more.
	t.Logf("row bomb: %d bytes compressed, %d bytes allocated", len(rows), alloc)
	if alloc > 192<<20 {
		t.Fatalf("row bomb allocated %d bytes", alloc)
	}
}

// TestZipManyEntries: a ZIP listing 70,000 entries (ZIP64) is refused
// from its end record, before archive/zip builds 70,000 structures.
func TestZipManyEntries(t *testing.T) {
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	for i := range 70_000 {
		if _, err := w.CreateHeader(&zip.FileHeader{Name: itoa(int64(i)), Method: zip.Store}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	data := b.Bytes()
	if n, ok := zipEntryCount(data); !ok || n != 70_000 {
		t.Fatalf("count %d %v", n, ok)
	}
	var err error
	alloc := testkit.Allocated(func() { _, err = discard(data, nil) })
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "70000 entries") {
		t.Fatalf("got %v", err)
	}
	t.Logf("allocated %d bytes", alloc)
	if alloc > 1<<20 {
		t.Fatalf("allocated %d bytes to refuse", alloc)
	}
}
