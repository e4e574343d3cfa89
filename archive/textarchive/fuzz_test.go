package textarchive

import (
	"context"
	"testing"
	"unicode/utf8"
)

// FuzzParseDocument: any bytes either parse into a document within the
// bounds or fail with a fault; never a panic.
func FuzzParseDocument(f *testing.F) {
	for _, s := range []string{
		`{"parts": [{"text": "a", "page": 3, "method": "ocr", "warnings": ["w"]}], "title": "T", "source_url": "https://example.org/"}`,
		`{"parts": [{"text": "a\r\nb", "page": "iv"}]}`,
		`{"parts": []}`,
		`{"parts": [{"text": "\u0000"}], "parts": []}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseDocument(context.Background(), data)
		if err != nil {
			return
		}
		if len(d.Parts) == 0 || d.check() != nil {
			t.Fatalf("a parsed document out of bounds: %+v", d)
		}
		for _, p := range d.Parts {
			if !utf8.ValidString(p.Text) {
				t.Fatal("invalid UTF-8 accepted")
			}
		}
	})
}

// FuzzParseCitation: any bytes either parse into a citation whose quote
// is as long as its position, or fail with a fault.
func FuzzParseCitation(f *testing.F) {
	f.Add([]byte(`{"format": 1, "archive": "x", "collection": "c", "item": "i", "version": "v1", "seq": 1, "version_digest": "d", "part": 0, "part_sha256": "s", "part_chars": 4, "position": {"start": 0, "length": 1}, "quote": {"exact": "a", "prefix": "", "suffix": "bc"}}`))
	f.Add([]byte(`{"format": 1, "version": "v01", "position": {"start": 0, "length": 1}, "quote": {"exact": "é"}}`))
	f.Add([]byte(`{"format": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseCitation(data)
		if err != nil {
			return
		}
		if int64(utf8.RuneCountInString(c.Quote.Exact)) != c.Position.Length || c.Position.Length < 1 {
			t.Fatalf("a parsed citation whose quote does not fit its position: %+v", c)
		}
		if _, err := parseVersionRef(c.Version); err != nil {
			t.Fatalf("a parsed citation of no version: %q", c.Version)
		}
	})
}

// FuzzParseSourcePolicy: any bytes either parse into a policy whose
// fetch and budget policies were built, with every bound set, or fail
// with a fault.
func FuzzParseSourcePolicy(f *testing.F) {
	f.Add([]byte(`{"format": 1, "group": "news", "hosts": ["example.org", "*.example.org"], "retention": "text_only"}`))
	f.Add([]byte(`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "original", "max_response_bytes": 100, "window_seconds": 5, "ports": [8443], "private_destinations": ["10.1.0.0/16"]}`))
	f.Add([]byte(`{"format": 1, "group": "g", "hosts": [], "retention": "original"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ParseSourcePolicy(context.Background(), data, "")
		if err != nil {
			return
		}
		if p.fetch == nil || p.budget == nil || p.MaxResponseBytes <= 0 || p.WindowBytes <= 0 || len(p.Hosts) == 0 ||
			p.Retention != RetainTextOnly && p.Retention != RetainOriginal {
			t.Fatalf("a parsed policy without its parts: %+v", p)
		}
	})
}
