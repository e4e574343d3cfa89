package sniff

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/htmldoc"
)

// Format is what the caller expects the body to be.
type Format string

const (
	JSON Format = "json"
	Feed Format = "feed" // RSS or Atom
	HTML Format = "html"
	PDF  Format = "pdf"
	CSV  Format = "csv"
)

// ParseFormat parses json, feed, html, pdf or csv.
func ParseFormat(s string) (Format, error) {
	switch f := Format(s); f {
	case JSON, Feed, HTML, PDF, CSV:
		return f, nil
	}
	return "", fault.New(fault.InvalidInput, "expected format must be json, feed, html, pdf or csv")
}

// Kind is what the body was found to be.
type Kind string

const (
	KindEmpty  Kind = "empty"
	KindJSON   Kind = "json"
	KindRSS    Kind = "rss"  // <rss>
	KindRDF    Kind = "rdf"  // <rdf:RDF> (RSS 1.0)
	KindAtom   Kind = "atom" // <feed>
	KindXML    Kind = "xml"  // other XML
	KindHTML   Kind = "html"
	KindPDF    Kind = "pdf"
	KindGzip   Kind = "gzip"
	KindZip    Kind = "zip"
	KindBinary Kind = "binary" // anything else that is not text
	KindText   Kind = "text"
)

func (k Kind) describe() string {
	switch k {
	case KindEmpty:
		return "empty"
	case KindJSON:
		return "JSON"
	case KindRSS, KindRDF, KindAtom:
		return "a feed"
	case KindXML:
		return "XML that is not a feed"
	case KindHTML:
		return "HTML"
	case KindPDF:
		return "a PDF"
	case KindGzip:
		return "gzip-compressed (an undecoded Content-Encoding?)"
	case KindZip:
		return "a ZIP archive"
	case KindBinary:
		return "binary data"
	}
	return "plain text"
}

// Report is what Check found.
type Report struct {
	Expected Format `json:"expected"`
	Detected Kind   `json:"detected"`
	// Sniffed is the media type WHATWG content sniffing (net/http) gives
	// the body's start.
	Sniffed string `json:"sniffed"`
	// MediaType is the declared media type without parameters, lower
	// case; empty when none was declared.
	MediaType string    `json:"media_type,omitempty"`
	Warnings  []Warning `json:"warnings"`
}

// Warning is something the caller should know before reading the body.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Warning codes.
const (
	WarnMediaTypeInvalid  = "media_type_invalid"  // the declared media type does not parse
	WarnMediaTypeGeneric  = "media_type_generic"  // declared as octet-stream or text/plain: says nothing
	WarnMediaTypeMismatch = "media_type_mismatch" // declared as another format than expected
	WarnCharset           = "charset"             // a declared or marked encoding other than UTF-8
	WarnSignatureOnly     = "signature_only"      // PDF: recognised by signature, not parsed
	WarnPDFLeadingBytes   = "pdf_leading_bytes"   // bytes before %PDF-
	WarnPDFNoEOF          = "pdf_no_eof"          // no %%EOF near the end: possibly truncated
	WarnCompressed        = "compressed"          // CSV expected, body is a ZIP or gzip
	WarnSingleColumn      = "single_column"       // CSV expected, no delimiter in the first line
	WarnJSONErrorBody     = "json_error_body"     // a JSON object that looks like an error response
	WarnNeedsScripts      = "needs_scripts"       // HTML whose content is rendered by scripts
	WarnNotChecked        = "not_checked"         // HTML too large for the access-screen check
	WarnNoMarkup          = "no_markup"           // HTML expected, text without markup at its start
)

// ErrRejected marks a body that is not the expected format.
var ErrRejected = fault.NewMark("the body is not the expected format")

// RejectError reports why a body was rejected. Screen is set when the body
// is an access screen. Its code is fault.Integrity; it unwraps to
// ErrRejected, to htmldoc.ErrAccessScreen for screens, and to a
// *fault.Error.
type RejectError struct {
	Expected Format
	Detected Kind
	Screen   htmldoc.ScreenKind
	Reason   string
	screen   error
	fault    *fault.Error
}

func reject(expected Format, detected Kind, reason string, screen *htmldoc.AccessScreenError) *RejectError {
	e := &RejectError{Expected: expected, Detected: detected, Reason: reason}
	if screen != nil {
		e.Screen, e.screen = screen.Kind, screen
	}
	e.fault = fault.New(fault.Integrity, "expected %s, rejected: %s", expected, reason)
	return e
}

func (e *RejectError) Error() string { return e.fault.Message }

func (e *RejectError) Unwrap() []error {
	// The fault comes first: errors.As must find this error's code and
	// message before the screen's own.
	if e.screen != nil {
		return []error{e.fault, ErrRejected, e.screen}
	}
	return []error{e.fault, ErrRejected}
}

// Check classifies data against the expected format and the declared media
// type (may be empty). It fails with limit past limits.SniffMaxBytes, with
// a *RejectError (integrity) for a wrong-format, empty or access-screen
// body, and with invalid_input for an unknown format.
func Check(ctx context.Context, data []byte, expect Format, mediaType string) (*Report, error) {
	if _, err := ParseFormat(string(expect)); err != nil {
		return nil, err
	}
	if len(data) > limits.SniffMaxBytes {
		return nil, fault.LimitExceeded("response bytes", limits.SniffMaxBytes, int64(len(data)))
	}
	head := data[:min(len(data), limits.SniffHeadBytes)]
	r := &Report{Expected: expect, Detected: detect(head, data), Sniffed: http.DetectContentType(head), Warnings: []Warning{}}
	r.checkMediaType(mediaType)
	if bytes.HasPrefix(data, []byte{0xEF, 0xBB, 0xBF}) && (expect == JSON || expect == CSV) {
		r.warn(WarnCharset, "the body starts with a UTF-8 byte order mark: strict JSON readers (textjson) refuse it; CSV readers must strip it")
	}
	if bytes.HasPrefix(data, []byte{0xFE, 0xFF}) || bytes.HasPrefix(data, []byte{0xFF, 0xFE}) {
		r.warn(WarnCharset, "the body starts with a UTF-16 byte order mark: it is not UTF-8")
	}

	if r.Detected == KindEmpty {
		return nil, reject(expect, r.Detected, "the body is empty", nil)
	}
	// An HTML body is read by htmldoc whatever was expected: an access
	// screen is the most useful reason to give for a wrong-format body.
	if r.Detected == KindHTML {
		if len(data) > limits.HTMLMaxBytes {
			r.warn(WarnNotChecked, fmt.Sprintf("the HTML is larger than the HTML reader's limit of %d bytes: it was not checked for access screens, and htmldoc will refuse it", limits.HTMLMaxBytes))
		} else {
			doc, err := htmldoc.Parse(ctx, data, htmldoc.SelectText, &htmldoc.Options{ContentType: mediaType})
			var se *htmldoc.AccessScreenError
			switch {
			case errors.As(err, &se):
				return nil, reject(expect, r.Detected, "the body is "+strings.TrimPrefix(se.Error(), "the page is "), se)
			case err != nil && fault.CodeOf(err) == fault.Limit:
				r.warn(WarnNotChecked, "the HTML exceeds the HTML reader's limits ("+fault.As(err).Message+"): it was not checked for access screens")
			case err != nil:
				return nil, err
			default:
				for _, w := range doc.Warnings {
					if w.Code == htmldoc.WarnNeedsScripts {
						r.warn(WarnNeedsScripts, w.Message)
					}
				}
			}
		}
	}
	if reason := r.mismatch(); reason != "" {
		return nil, reject(expect, r.Detected, reason, nil)
	}
	switch expect {
	case PDF:
		r.checkPDF(data)
	case CSV:
		r.checkCSV(head)
	case JSON:
		r.checkJSONError(data)
	}
	return r, nil
}

func (r *Report) warn(code, msg string) {
	r.Warnings = append(r.Warnings, Warning{Code: code, Message: msg})
}

// accepts lists the detected kinds each format accepts.
var accepts = map[Format][]Kind{
	JSON: {KindJSON},
	Feed: {KindRSS, KindRDF, KindAtom},
	HTML: {KindHTML, KindText},
	PDF:  {KindPDF},
	CSV:  {KindText, KindGzip, KindZip},
}

// mismatch is the reason the detected kind is not the expected format, or
// "".
func (r *Report) mismatch() string {
	if slices.Contains(accepts[r.Expected], r.Detected) {
		if r.Expected == HTML && r.Detected == KindText {
			r.warn(WarnNoMarkup, "the body starts with text, not HTML markup")
		}
		return ""
	}
	reason := "the body is " + r.Detected.describe()
	if r.Detected == KindBinary {
		reason += " (sniffed as " + r.Sniffed + ")"
	}
	return reason
}

// detect classifies the body from its head (and, for a bare JSON scalar,
// the whole body).
func detect(head, data []byte) Kind {
	if len(data) == 0 {
		return KindEmpty
	}
	if bytes.Contains(head[:min(len(head), 1024)], []byte("%PDF-")) {
		return KindPDF
	}
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return KindGzip
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return KindZip
	}
	text := bytes.TrimPrefix(head, []byte{0xEF, 0xBB, 0xBF})
	text = bytes.TrimLeft(text, " \t\r\n\f")
	if len(text) == 0 {
		return KindText
	}
	switch c := text[0]; {
	case c == '<':
		return markup(text)
	case c == '{' || c == '[':
		return KindJSON
	case c == '"' || c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n':
		// A bare JSON scalar is JSON only if the whole body is one.
		if jsontext.Value(bytes.TrimSpace(bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF}))).IsValid() {
			return KindJSON
		}
	}
	if binary(head) {
		return KindBinary
	}
	if lower := bytes.ToLower(head); bytes.Contains(lower, []byte("<html")) || bytes.Contains(lower, []byte("<body")) {
		return KindHTML
	}
	return KindText
}

// binary reports a head that is not text: WHATWG sniffing finds a binary
// type or control bytes, or it holds NUL bytes.
func binary(head []byte) bool {
	return !strings.HasPrefix(http.DetectContentType(head), "text/") || bytes.IndexByte(head, 0) >= 0
}

// markup classifies a body starting with '<' by its root element, read
// with a few XML tokens; HTML that is not well-formed XML is recognised by
// WHATWG sniffing.
func markup(text []byte) Kind {
	d := xml.NewDecoder(bytes.NewReader(text))
	d.Strict = false
	for i := 0; i < 64; i++ {
		tok, err := d.RawToken()
		if err != nil {
			break
		}
		switch t := tok.(type) {
		case xml.Directive:
			if f := strings.Fields(string(t)); len(f) > 1 && strings.EqualFold(f[0], "DOCTYPE") && strings.EqualFold(f[1], "html") {
				return KindHTML
			}
		case xml.StartElement:
			switch strings.ToLower(t.Name.Local) {
			case "html":
				return KindHTML
			case "rss":
				return KindRSS
			case "rdf":
				return KindRDF
			case "feed":
				return KindAtom
			}
			if strings.HasPrefix(http.DetectContentType(text), "text/html") {
				return KindHTML
			}
			return KindXML
		}
	}
	if strings.HasPrefix(http.DetectContentType(text), "text/html") {
		return KindHTML
	}
	if strings.HasPrefix(http.DetectContentType(text), "text/xml") {
		return KindXML
	}
	return KindText
}

// mediaTypes are the declared types that fit each format.
var mediaTypes = map[Format][]string{
	JSON: {"application/json", "text/json", "application/x-json"},
	Feed: {"application/rss+xml", "application/atom+xml", "application/rdf+xml", "application/xml", "text/xml", "application/x-rss+xml"},
	HTML: {"text/html", "application/xhtml+xml"},
	PDF:  {"application/pdf", "application/x-pdf"},
	CSV:  {"text/csv", "text/tab-separated-values", "application/csv", "text/x-csv", "application/vnd.ms-excel", "application/zip", "application/gzip"},
}

func (r *Report) checkMediaType(declared string) {
	if strings.TrimSpace(declared) == "" {
		return
	}
	mt, params, err := mime.ParseMediaType(declared)
	if err != nil {
		r.warn(WarnMediaTypeInvalid, "the declared media type does not parse")
		return
	}
	r.MediaType = mt
	switch {
	case slices.Contains(mediaTypes[r.Expected], mt),
		r.Expected == JSON && strings.HasSuffix(mt, "+json"),
		r.Expected == Feed && strings.HasSuffix(mt, "+xml") && mt != "application/xhtml+xml":
	case mt == "application/octet-stream" || mt == "binary/octet-stream" || mt == "text/plain":
		r.warn(WarnMediaTypeGeneric, "the declared media type "+mt+" says nothing about the format")
	default:
		r.warn(WarnMediaTypeMismatch, "the declared media type "+mt+" is not one for "+string(r.Expected))
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") && !strings.EqualFold(cs, "us-ascii") {
		msg := "the declared charset is not UTF-8"
		if r.Expected == JSON {
			msg += ": JSON must be UTF-8"
		}
		r.warn(WarnCharset, msg)
	}
}

func (r *Report) checkPDF(data []byte) {
	r.warn(WarnSignatureOnly, "recognised by its %PDF- signature only: the PDF was not parsed, no text was extracted and no OCR was done")
	if i := bytes.Index(data[:min(len(data), 1024)], []byte("%PDF-")); i > 0 {
		r.warn(WarnPDFLeadingBytes, fmt.Sprintf("%d bytes precede the %%PDF- signature", i))
	}
	if !bytes.Contains(data[max(0, len(data)-1024):], []byte("%%EOF")) {
		r.warn(WarnPDFNoEOF, "no %%EOF marker in the last 1,024 bytes: the PDF may be truncated")
	}
}

func (r *Report) checkCSV(head []byte) {
	if r.Detected != KindText {
		r.warn(WarnCompressed, "the body is "+r.Detected.describe()+": the tabular reader accepts a ZIP holding one CSV or a gzip'd CSV")
		return
	}
	line := head
	if i := bytes.IndexAny(line, "\r\n"); i >= 0 {
		line = line[:i]
	}
	if !bytes.ContainsAny(line, ",;\t|") {
		r.warn(WarnSingleColumn, "the first line holds no comma, semicolon, tab or pipe: a single column, or not CSV")
	}
}

// checkJSONError warns about a small JSON object with an error member: an
// error response served with a success status. It reads the top-level
// member names only.
func (r *Report) checkJSONError(data []byte) {
	data = bytes.TrimPrefix(data, []byte{0xEF, 0xBB, 0xBF})
	if len(data) > limits.SniffHeadBytes {
		return
	}
	d := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return
	}
	var names []string
	for len(names) <= 4 {
		tok, err := d.ReadToken()
		if err != nil || tok.Kind() != '"' {
			break
		}
		names = append(names, strings.ToLower(tok.String()))
		if err := d.SkipValue(); err != nil {
			return
		}
	}
	if len(names) <= 4 && (slices.Contains(names, "error") || slices.Contains(names, "errors")) {
		r.warn(WarnJSONErrorBody, "the body is a small JSON object with an error member: it may be an error response served with a success status")
	}
}
