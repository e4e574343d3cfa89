package tabular

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"testing"
)

// benchCSV is a realistic table of about 8 MiB: 8 columns of ids, names,
// e-mail addresses, states, dates, numbers and a quoted comment holding
// delimiters and doubled quotes.
var benchCSV, benchRows = func() ([]byte, int) {
	var b bytes.Buffer
	b.WriteString("id,name,email,city,state,joined,score,comment\n")
	states := []string{"CA", "NY", "TX", "WA", "OR"}
	n := 0
	for ; b.Len() < 8<<20; n++ {
		fmt.Fprintf(&b, "%d,User %d,user%d@example.org,Springfield,%s,2024-%02d-%02d,%d.%02d,\"likes \"\"csv\"\", commas, and more\"\n",
			n, n, n, states[n%len(states)], n%12+1, n%28+1, n%1000, n%100)
	}
	return b.Bytes(), n
}()

var benchGzip = func() []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(benchCSV)
	w.Close()
	return b.Bytes()
}()

// report sets the throughput in bytes of CSV text and rows per second.
func report(b *testing.B) {
	b.SetBytes(int64(len(benchCSV)))
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// The benchmarks pair tabular with encoding/csv (and compress/gzip) on the
// same input; bench/readers.sh runs them alternately and reports ratios.

func BenchmarkScanFunc(b *testing.B) {
	for b.Loop() {
		if _, err := ScanFunc(context.Background(), benchCSV, nil, func([]string) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

func stdRead(b *testing.B, r io.Reader) {
	cr := csv.NewReader(r)
	for {
		_, err := cr.Read()
		if err == io.EOF {
			return
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdCSVRead(b *testing.B) {
	for b.Loop() {
		stdRead(b, bytes.NewReader(benchCSV))
	}
	report(b)
}

func BenchmarkScanAll(b *testing.B) {
	for b.Loop() {
		if _, err := Scan(context.Background(), benchCSV, nil); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

func BenchmarkStdCSVReadAll(b *testing.B) {
	for b.Loop() {
		if _, err := csv.NewReader(bytes.NewReader(benchCSV)).ReadAll(); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

func BenchmarkScanFilter(b *testing.B) {
	opts := &Options{Columns: []string{"id", "email"}, Filter: []Condition{{Column: "state", Value: "TX"}}}
	for b.Loop() {
		if _, err := Scan(context.Background(), benchCSV, opts); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

func BenchmarkScanGzip(b *testing.B) {
	for b.Loop() {
		if _, err := ScanFunc(context.Background(), benchGzip, nil, func([]string) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	report(b)
}

func BenchmarkStdGzipCSVRead(b *testing.B) {
	for b.Loop() {
		zr, err := gzip.NewReader(bytes.NewReader(benchGzip))
		if err != nil {
			b.Fatal(err)
		}
		stdRead(b, zr)
	}
	report(b)
}
