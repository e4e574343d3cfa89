package tabular

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestQuotedCRLFKept: a CRLF inside a quoted field is data. encoding/csv
// alone returns it as LF (a silent change of the cell); the scan keeps it,
// and line ends outside quotes stay record ends.
func TestQuotedCRLFKept(t *testing.T) {
	for _, c := range []struct {
		name, data string
		want       [][]string
	}{
		{"crlf in quotes", "a,b\r\n\"x\r\ny\",2\r\n", [][]string{{"x\r\ny", "2"}}},
		{"lf in quotes", "a,b\n\"x\ny\",2\n", [][]string{{"x\ny", "2"}}},
		{"lone cr in quotes", "a,b\r\n\"x\ry\",2\r\n", [][]string{{"x\ry", "2"}}},
		{"crlf rows, quoted quote", "a,b\r\n\"say \"\"hi\"\"\r\nthere\",\"\"\r\n3,4\r\n", [][]string{{"say \"hi\"\r\nthere", ""}, {"3", "4"}}},
		{"cr at end of quoted field", "a\r\n\"x\r\"\r\n", [][]string{{"x\r"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := Scan(bg, []byte(c.data), &Options{Dialect: Comma})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Rows) != len(c.want) {
				t.Fatalf("rows %q, want %q", res.Rows, c.want)
			}
			for i := range c.want {
				if strings.Join(res.Rows[i], "|") != strings.Join(c.want[i], "|") {
					t.Errorf("row %d %q, want %q", i, res.Rows[i], c.want[i])
				}
			}
		})
	}
}

// TestQuotedCRLFReader: the reader's output, read one byte at a time (a
// CR held across reads), and its offset mapping.
func TestQuotedCRLFReader(t *testing.T) {
	in := "a\r\n\"b\r\nc\"\r\n\"\r\n\""
	q := newQuotedCRLF(iotest.OneByteReader(strings.NewReader(in)))
	var out bytes.Buffer
	buf := make([]byte, 4)
	for {
		n, err := q.Read(buf)
		out.Write(buf[:n])
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := "a\r\n\"b\r\r\nc\"\r\n\"\r\r\n\""; out.String() != want {
		t.Fatalf("got %q, want %q", out.String(), want)
	}
	if got := q.Source(int64(out.Len())); got != int64(len(in)) {
		t.Errorf("Source(end) = %d, want %d", got, len(in))
	}
}
