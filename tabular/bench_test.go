package tabular

import (
	"bytes"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"testing"
)

// benchCSV is a realistic table: 8 columns of ids, names, quoted text with
// delimiters, dates and numbers, about 100,000 rows (8 MiB).
func benchCSV() ([]byte, int) {
	var b bytes.Buffer
	b.WriteString("id,name,email,city,state,joined,score,comment\n")
	states := []string{"CA", "NY", "TX", "WA", "OR"}
	n := 0
	for ; b.Len() < 8<<20; n++ {
		fmt.Fprintf(&b, "%d,User %d,user%d@example.org,Springfield,%s,2024-%02d-%02d,%d.%02d,\"likes \"\"csv\"\", commas, and more\"\n",
			n, n, n, states[n%len(states)], n%12+1, n%28+1, n%1000, n%100)
	}
	return b.Bytes(), n
}

func BenchmarkCSV(b *testing.B) {
	data, rows := benchCSV()
	ctx := context.Background()
	report := func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	}
	b.Run("tabular.ScanFunc", func(b *testing.B) {
		for b.Loop() {
			if _, err := ScanFunc(ctx, data, &Options{Dialect: Comma}, func([]string) error { return nil }); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("encoding_csv.Read", func(b *testing.B) {
		for b.Loop() {
			r := csv.NewReader(bytes.NewReader(data))
			for {
				_, err := r.Read()
				if err == io.EOF {
					break
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		report(b)
	})
	b.Run("tabular.Scan_filter", func(b *testing.B) {
		for b.Loop() {
			if _, err := Scan(ctx, data, &Options{Columns: []string{"id", "email"}, Filter: []Condition{{Column: "state", Value: "TX"}}}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("tabular.Scan_all", func(b *testing.B) {
		for b.Loop() {
			if _, err := Scan(ctx, data, nil); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("encoding_csv.ReadAll", func(b *testing.B) {
		for b.Loop() {
			if _, err := csv.NewReader(bytes.NewReader(data)).ReadAll(); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
}
