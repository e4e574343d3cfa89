package tools

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"strings"
	"testing"
)

// chunkReader returns at most n bytes per Read, so that lines cross the
// window's chunks.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// FuzzShortLines checks that numbering with shortLines gives what the
// general path alone gives, byte for byte (text, every field, the
// refusal), for any content, window, output bound and chunking.
func FuzzShortLines(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), 1, 3, 4096, 7, int64(10))
	f.Add([]byte("a\r\nb\r\nc"), 2, 2, 2048, 1, int64(10))
	f.Add([]byte(strings.Repeat("0123456789\n", 500)), 10, 300, 2100, 64<<10, int64(100))
	// Budgets of 1,798 and 1,799 bytes: line 100 (18 bytes with its
	// number, 17 before its newline) just does not fit, then just fits.
	f.Add([]byte(strings.Repeat("0123456789\n", 500)), 1, 300, 3596, 64<<10, int64(0))
	f.Add([]byte(strings.Repeat("0123456789\n", 500)), 1, 300, 3598, 64<<10, int64(0))
	f.Add([]byte(strings.Repeat("x", 3000)+"\ny\n"+strings.Repeat("z", 1999)+"\r\n"+strings.Repeat("w", 2000)+"\n"), 1, 9, 8192, 100, int64(3))
	f.Add([]byte("\r\n\n\r\r\n\n"), 1, 9, 4096, 3, int64(10))
	f.Add([]byte("text\x00binary\n"), 1, 9, 4096, 5, int64(10))
	f.Add([]byte("ok\nbad \xff utf8\nok\n"), 1, 9, 4096, 4, int64(10))
	f.Add([]byte("é\nascii\n"+strings.Repeat("a\n", 40)), 2, 30, 2048, 9, int64(10))
	f.Add([]byte(""), 1, 1, 4096, 1, int64(10))
	f.Fuzz(func(t *testing.T, content []byte, first, n, bound, chunk int, numBase int64) {
		if first < 1 || first > 1<<20 || n < 1 || n > 1<<20 || bound < 2048 || bound > 1<<20 || chunk < 1 || numBase < 0 || numBase > 1<<30 {
			return
		}
		read := func(general bool) (ReadResult, error) {
			w := newWindow(first, first+n-1, request{maxOutput: int64(bound)}, int64(len(content)), readBudget(int64(bound), "f"))
			w.general, w.numBase = general, int(numBase)
			return w.result(context.Background(), chunkReader{bytes.NewReader(content), chunk}, "f")
		}
		want, werr := read(true)
		got, gerr := read(false)
		defer want.Release()
		defer got.Release()
		if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
			t.Fatalf("errors differ: general %v, with shortLines %v", werr, gerr)
		}
		if !bytes.Equal(got.text, want.text) {
			t.Fatalf("text differs:\ngeneral %q\nshort   %q", want.text, got.text)
		}
		got.text, want.text, got.lease, want.lease = nil, nil, outLease{}, outLease{}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("results differ:\ngeneral %+v\nshort   %+v", want, got)
		}
	})
}
