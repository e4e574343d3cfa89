package textjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// benchDoc is a realistic mixed document of about 1 MiB: records with
// strings (some with escapes and non-ASCII), integers, big integers,
// floats, booleans, nulls and nested arrays and objects.
var benchDoc = func() []byte {
	var b bytes.Buffer
	b.WriteString(`{"generated":"2025-01-01T00:00:00Z","records":[`)
	for i := 0; b.Len() < 1<<20; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","email":"user%d@example.org","score":%d.%03d,"active":%t,`+
			`"tags":["alpha","beta","gamma \"%d\""],"note":"caf\u00e9 \u2014 line\nbreak","parent":null,`+
			`"geo":{"lat":%d.123456,"lon":-%d.654321,"alt":1e3},"big":1234567890123456789%d}`,
			i, i, i, i%1000, i%997, i%3 == 0, i, i%90, i%180, i%10)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}()

// The benchmarks pair textjson with encoding/json on the same document;
// bench/readers.sh runs them alternately and reports the ratios.

func BenchmarkValidate(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if _, err := Validate(context.Background(), benchDoc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdValid(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if !json.Valid(benchDoc) {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if _, _, err := Decode(context.Background(), benchDoc, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkStdUnmarshalAny(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		var v any
		if err := json.Unmarshal(benchDoc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonical(b *testing.B) {
	b.SetBytes(int64(len(benchDoc)))
	for b.Loop() {
		if _, _, err := Canonical(context.Background(), benchDoc, nil); err != nil {
			b.Fatal(err)
		}
	}
}
