package textarchive

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/clip"
	"github.com/capkit/capkit/limits"
)

// Document is the text of one version: its parts in order, each with what
// the caller says of it (the physical page it came from, the method that
// produced the text, warnings about it), a title and the URL it came
// from. The archive stores what it is given; it checks sizes and
// encodings, not what the text says.
type Document struct {
	Parts     []Part `json:"parts"`
	Title     string `json:"title,omitempty"`
	SourceURL string `json:"source_url,omitempty"`
}

// Part is one part of a document.
type Part struct {
	Text string `json:"text"`
	// Page is the physical page the part is on, as the caller labels it
	// ("12", "iv"); a JSON number in PARTS.json is kept as its digits.
	Page Page `json:"page,omitempty"`
	// Method is how the text was produced ("ocr", "pdftotext", "html").
	Method   string   `json:"method,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
}

// Page is a part's page label: a JSON string, or a non-negative integer
// kept as its decimal digits.
type Page string

// UnmarshalJSON accepts a string or a non-negative integer.
func (p *Page) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*p = Page(s)
		return nil
	}
	n, err := strconv.ParseUint(string(b), 10, 63)
	if err != nil {
		return errors.New("a page is a string or a non-negative integer")
	}
	*p = Page(strconv.FormatUint(n, 10))
	return nil
}

// ParseDocument reads a PARTS.json document strictly: unknown members,
// duplicate names, invalid UTF-8 and values of the wrong type are refused
// with their position, and the document is checked (check).
func ParseDocument(ctx context.Context, data []byte) (*Document, error) {
	if len(data) > limits.ArchiveMaxDocumentJSONBytes {
		return nil, fault.LimitExceeded("document JSON bytes", limits.ArchiveMaxDocumentJSONBytes, int64(len(data)))
	}
	var d Document
	if err := strictJSON(data, &d, "document"); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fault.As(err)
	}
	if err := d.check(); err != nil {
		return nil, err
	}
	return &d, nil
}

// strictJSON decodes one JSON value into v, refusing unknown members,
// duplicate names, invalid UTF-8 and trailing data, with the position of
// what is wrong.
func strictJSON(data []byte, v any, what string) error {
	err := jsonv2.Unmarshal(data, v, jsonv2.RejectUnknownMembers(true))
	if err == nil {
		return nil
	}
	var se *jsonv2.SemanticError
	var sy *jsontext.SyntacticError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.ByteOffset)
		reason := "invalid value"
		if errors.Is(se.Err, jsonv2.ErrUnknownName) {
			reason = "unknown member"
		} else if se.Err != nil {
			reason = se.Err.Error()
		}
		return fault.Wrap(fault.InvalidInput, err, "%s: %s at %q (line %d, column %d)", what, reason, clip.Text(string(se.JSONPointer)), line, col)
	case errors.As(err, &sy):
		line, col := position(data, sy.ByteOffset)
		return fault.Wrap(fault.InvalidInput, err, "%s: not valid JSON at line %d, column %d", what, line, col)
	}
	return fault.Wrap(fault.InvalidInput, err, "%s does not decode", what)
}

// position is the 1-based line and column (in characters) of off.
func position(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	line, col = 1, 1
	for i := int64(0); i < off; {
		r, n := utf8.DecodeRune(data[i:])
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
		i += int64(n)
	}
	return line, col
}

// check holds d to the bounds: 1 to limits.ArchiveMaxParts parts of
// valid UTF-8, at most limits.ArchiveMaxTextBytes of text in all, and
// labels that are short lines of text.
func (d *Document) check() error {
	switch {
	case len(d.Parts) == 0:
		return fault.New(fault.InvalidInput, "the document has no parts")
	case len(d.Parts) > limits.ArchiveMaxParts:
		return fault.LimitExceeded("parts of one document", limits.ArchiveMaxParts, int64(len(d.Parts)))
	}
	total := 0
	for i, p := range d.Parts {
		total += len(p.Text)
		if total > limits.ArchiveMaxTextBytes {
			return fault.New(fault.Limit, "the document's text exceeds %s in all (at part %d)", limits.Bytes(limits.ArchiveMaxTextBytes), i)
		}
		if !utf8.ValidString(p.Text) {
			return fault.New(fault.InvalidInput, "part %d: the text is not valid UTF-8", i)
		}
		if err := checkPartLabels(p); err != nil {
			return fault.New(fault.CodeOf(err), "part %d: %s", i, fault.As(err).Message)
		}
	}
	if err := checkText("title", d.Title, limits.ArchiveMaxTitleBytes, false); err != nil {
		return err
	}
	return checkSourceURL(d.SourceURL)
}

func checkPartLabels(p Part) error {
	if err := checkText("page", string(p.Page), limits.ArchiveMaxLabelBytes, false); err != nil {
		return err
	}
	if err := checkText("method", p.Method, limits.ArchiveMaxLabelBytes, false); err != nil {
		return err
	}
	if len(p.Warnings) > limits.ArchiveMaxWarnings {
		return fault.LimitExceeded("warnings of one part", limits.ArchiveMaxWarnings, int64(len(p.Warnings)))
	}
	for _, w := range p.Warnings {
		if err := checkText("warning", w, limits.ArchiveMaxWarningBytes, true); err != nil {
			return err
		}
	}
	return nil
}

// manifest is what a version's digest covers: everything it holds, the
// parts by their SHA-256. The digest is the SHA-256 of its JSON in RFC
// 8785 canonical form (jsontext.Value.Canonicalize).
type manifest struct {
	Kind          string         `json:"kind"`
	Title         string         `json:"title"`
	SourceURL     string         `json:"source_url"`
	Name          string         `json:"name"`
	MediaType     string         `json:"media_type"`
	Blob          string         `json:"blob"`
	BlobBytes     int64          `json:"blob_bytes"`
	ReceiptSHA256 string         `json:"receipt_sha256"`
	Parts         []partManifest `json:"parts"`
}

type partManifest struct {
	SHA256   string   `json:"sha256"`
	Chars    int64    `json:"chars"`
	Page     string   `json:"page"`
	Method   string   `json:"method"`
	Warnings []string `json:"warnings"`
}

func (m *manifest) digest() string {
	data, err := json.Marshal(m)
	if err != nil {
		panic(err) // strings and numbers only
	}
	v := jsontext.Value(data)
	if err := v.Canonicalize(); err != nil {
		panic(err)
	}
	return sha256Hex(v)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func sha256String(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// storedPart is a part as the archive holds it.
type storedPart struct {
	Part
	SHA256 string
	Chars  int64
}

// measure returns d's parts with their digests and lengths.
func (d *Document) measure() []storedPart {
	out := make([]storedPart, len(d.Parts))
	for i, p := range d.Parts {
		if p.Warnings == nil {
			p.Warnings = []string{}
		}
		out[i] = storedPart{Part: p, SHA256: sha256String(p.Text), Chars: int64(utf8.RuneCountInString(p.Text))}
	}
	return out
}

func partManifests(parts []storedPart) []partManifest {
	out := make([]partManifest, len(parts))
	for i, p := range parts {
		out[i] = partManifest{SHA256: p.SHA256, Chars: p.Chars, Page: string(p.Page), Method: p.Method, Warnings: p.Warnings}
	}
	return out
}

func warningsJSON(w []string) string {
	if len(w) == 0 {
		return "[]"
	}
	data, _ := json.Marshal(w)
	return string(data)
}

func parseWarnings(s string) ([]string, error) {
	var w []string
	if err := json.NewDecoder(bytes.NewReader([]byte(s))).Decode(&w); err != nil {
		return nil, fault.Wrap(fault.Integrity, err, "a part's stored warnings do not decode")
	}
	if w == nil {
		w = []string{}
	}
	return w, nil
}
