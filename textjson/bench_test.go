package textjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
)

// benchDoc is a realistic mixed document: records with strings (some with
// escapes and non-ASCII), integers, floats, booleans, nulls and nested
// arrays and objects, about 1 MiB.
func benchDoc() []byte {
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
}

func BenchmarkJSON(b *testing.B) {
	doc := benchDoc()
	ctx := context.Background()
	b.Run("textjson.Validate", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := Validate(ctx, doc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if !json.Valid(doc) {
				b.Fatal("invalid")
			}
		}
	})
	b.Run("textjson.Decode", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, _, err := Decode(ctx, doc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding_json.Unmarshal_any", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("textjson.Canonical", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, _, err := Canonical(ctx, doc, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
