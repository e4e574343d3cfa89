package feed

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"strings"

	"golang.org/x/net/html/charset"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Namespaces of the formats read.
const (
	nsAtom    = "http://www.w3.org/2005/Atom"
	nsAtom03  = "http://purl.org/atom/ns#"
	nsRDF     = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
	nsRSS10   = "http://purl.org/rss/1.0/"
	nsRSS090  = "http://my.netscape.com/rdf/simple/0.9/"
	nsDC      = "http://purl.org/dc/elements/1.1/"
	nsContent = "http://purl.org/rss/1.0/modules/content/"
	nsXML     = "http://www.w3.org/XML/1998/namespace"
)

// The RSS 0.91 DTD, the one DOCTYPE accepted, is named by its public
// identifier (PUBLIC, with any system literal) or by Netscape's address of
// it (SYSTEM), over http or https. The DTD is never read; it declares the
// HTML 4 Latin-1 entities, which xml.HTMLEntity supplies.
const (
	netscapeRSS091       = "-//Netscape Communications//DTD RSS 0.91//EN"
	netscapeRSS091System = "//my.netscape.com/publish/formats/rss-0.91.dtd"
)

// elem is one element of the bounded tree.
type elem struct {
	name   xml.Name
	attrs  []xml.Attr
	parts  []part // text and child elements in document order
	kids   []*elem
	base   *url.URL // effective base URL (xml:base applied)
	parent *elem
	text   []byte // character data not yet closed into parts
}

type part struct {
	text string
	el   *elem
}

func (e *elem) attr(space, local string) (string, bool) {
	for _, a := range e.attrs {
		if a.Name.Local == local && a.Name.Space == space {
			return a.Value, true
		}
	}
	return "", false
}

func (e *elem) flushText() {
	if len(e.text) > 0 {
		e.parts = append(e.parts, part{text: string(e.text)})
		e.text = e.text[:0]
	}
}

func (e *elem) child(space, local string) *elem {
	for _, k := range e.kids {
		if k.name.Local == local && k.name.Space == space {
			return k
		}
	}
	return nil
}

func (e *elem) children(space, local string) []*elem {
	var out []*elem
	for _, k := range e.kids {
		if k.name.Local == local && k.name.Space == space {
			out = append(out, k)
		}
	}
	return out
}

// deepText is all character data in e, in document order.
func (e *elem) deepText() string {
	if e == nil {
		return ""
	}
	if len(e.parts) == 1 && e.parts[0].el == nil {
		return e.parts[0].text
	}
	var b strings.Builder
	var rec func(*elem)
	rec = func(e *elem) {
		for _, p := range e.parts {
			if p.el != nil {
				rec(p.el)
			} else {
				b.WriteString(p.text)
			}
		}
	}
	rec(e)
	return b.String()
}

// trimmed is e's text without surrounding whitespace.
func (e *elem) trimmed() string { return strings.TrimSpace(e.deepText()) }

// tree is the parsed document.
type tree struct {
	root         *elem
	nodes, depth int
	htmlEntities bool
	warnings     []Warning
}

// parseTree reads the token stream of data into a tree, counting nodes and
// depth as tokens arrive, refusing DTDs.
//
// With rep set, the read is lenient (see repair.go) and every repair is
// added to rep.
func parseTree(ctx context.Context, data []byte, source *url.URL, rep *repairs) (*tree, error) {
	t := &tree{}
	d := xml.NewDecoder(bytes.NewReader(data))
	d.Strict = rep == nil
	d.CharsetReader = charset.NewReaderLabel
	if rep != nil {
		d.Entity = xml.HTMLEntity
	}
	var stack []*elem
	for i := 0; ; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fault.As(err)
			}
		}
		before := d.InputOffset()
		tok, err := d.Token()
		if rep != nil && err == nil {
			rep.token(tok, stack, before, d.InputOffset())
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, syntaxFault(d, err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			e, err := t.start(d, tk, stack, source)
			if err != nil {
				return nil, err
			}
			stack = append(stack, e)
			t.depth = max(t.depth, len(stack))
		case xml.EndElement:
			// The decoder has matched it to the open element.
			stack[len(stack)-1].flushText()
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				top := stack[len(stack)-1]
				top.text = append(top.text, tk...)
			}
		case xml.Comment, xml.ProcInst:
			if err := t.count(); err != nil {
				return nil, err
			}
		case xml.Directive:
			if err := t.count(); err != nil {
				return nil, err
			}
			if err := t.directive(d, tk); err != nil {
				return nil, err
			}
		}
	}
	if t.root == nil {
		return nil, fault.New(fault.InvalidInput, "not a feed: no root element")
	}
	return t, nil
}

// start checks a start element against the bounds and adds it to the tree
// under the open element (or as the root).
func (t *tree) start(d *xml.Decoder, tk xml.StartElement, stack []*elem, source *url.URL) (*elem, error) {
	if err := t.count(); err != nil {
		return nil, err
	}
	if len(stack) == 0 && t.root != nil {
		return nil, fault.New(fault.InvalidInput, "not a feed: more than one root element")
	}
	if len(stack) == 0 && strings.EqualFold(tk.Name.Local, "html") {
		return nil, fault.New(fault.InvalidInput, "not a feed: the document is HTML")
	}
	if len(stack)+1 > limits.FeedMaxDepth {
		return nil, fault.LimitExceeded("feed nesting depth", limits.FeedMaxDepth, 0)
	}
	if len(tk.Attr) > limits.FeedMaxAttributes {
		return nil, fault.LimitExceeded("feed element attributes", limits.FeedMaxAttributes, int64(len(tk.Attr)))
	}
	if dupAttr(tk.Attr) {
		line, col := d.InputPos()
		return nil, fault.New(fault.InvalidInput, "not well-formed XML at line %d, column %d: an element repeats an attribute", line, col)
	}
	e := &elem{name: tk.Name, attrs: tk.Attr}
	if len(stack) == 0 {
		e.base = source
		t.root = e
	} else {
		p := stack[len(stack)-1]
		p.flushText()
		e.parent, e.base = p, p.base
		p.kids = append(p.kids, e)
		p.parts = append(p.parts, part{el: e})
	}
	if b, ok := e.attr(nsXML, "base"); ok {
		if u, err := resolve(e.base, strings.TrimSpace(b)); err == nil && absoluteHTTP(u) {
			e.base = u
		} else {
			t.warnings = append(t.warnings, Warning{Code: WarnBase, Message: "an xml:base is not an http(s) URL: the enclosing base is used"})
		}
	}
	return e, nil
}

func (t *tree) count() error {
	t.nodes++
	if t.nodes > limits.FeedMaxNodes {
		return fault.LimitExceeded("feed nodes", limits.FeedMaxNodes, 0)
	}
	return nil
}

// directive refuses DTDs. encoding/xml never reads external entities and
// fails on entities it does not know, but it would skip an internal subset
// silently; capkit refuses every DOCTYPE but the RSS 0.91 one (which it
// does not read either), so a billion-laughs feed fails at its DOCTYPE,
// before any entity is used.
func (t *tree) directive(d *xml.Decoder, dir xml.Directive) error {
	s := strings.TrimSpace(string(dir))
	if len(s) < 7 || !strings.EqualFold(s[:7], "DOCTYPE") {
		return fault.New(fault.InvalidInput, "not a feed: markup declarations outside a DOCTYPE are refused")
	}
	rest := strings.Fields(s[7:])
	switch {
	case len(rest) > 0 && strings.EqualFold(rest[0], "html"):
		return fault.New(fault.InvalidInput, "not a feed: the document is HTML")
	case strings.ContainsRune(s, '['):
		return fault.New(fault.InvalidInput, "DTDs are refused: the DOCTYPE declares entities or other markup (no entity expansion)")
	case !isRSS091Doctype(s[7:]):
		return fault.New(fault.InvalidInput, "DTDs are refused: only the RSS 0.91 DOCTYPE is accepted, and it is never read")
	}
	d.Entity = xml.HTMLEntity
	t.htmlEntities = true
	return nil
}

// isRSS091Doctype reports whether decl, a DOCTYPE declaration after its
// keyword and without an internal subset, is `rss` with the RSS 0.91
// DTD's external identifier in either form.
func isRSS091Doctype(decl string) bool {
	tok, ok := doctypeTokens(decl)
	switch {
	case !ok || len(tok) < 3 || tok[0] != "rss":
		return false
	case tok[1] == "PUBLIC":
		return len(tok) == 4 && tok[2] == netscapeRSS091
	case tok[1] == "SYSTEM":
		return len(tok) == 3 && (tok[2] == "http:"+netscapeRSS091System || tok[2] == "https:"+netscapeRSS091System)
	}
	return false
}

// doctypeTokens splits a DOCTYPE declaration into its name, keywords and
// quoted literals (unquoted); an unterminated literal is not ok.
func doctypeTokens(decl string) (tok []string, ok bool) {
	for s := decl; ; {
		s = strings.TrimLeft(s, " \t\r\n")
		switch {
		case s == "":
			return tok, true
		case s[0] == '"' || s[0] == '\'':
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 {
				return nil, false
			}
			tok, s = append(tok, s[1:1+end]), s[2+end:]
		default:
			end := strings.IndexAny(s, " \t\r\n\"'")
			if end < 0 {
				end = len(s)
			}
			tok, s = append(tok, s[:end]), s[end:]
		}
	}
}

// parseSource is the source URL, nil when none is given.
func parseSource(sourceURL string) (*url.URL, error) {
	if sourceURL == "" {
		return nil, nil
	}
	source, err := url.Parse(sourceURL)
	if err != nil || !absoluteHTTP(source) {
		return nil, fault.New(fault.InvalidInput, "the source URL must be an absolute http or https URL")
	}
	return source, nil
}

func absoluteHTTP(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// resolve is ref resolved against base, or ref itself without a base.
func resolve(base *url.URL, ref string) (*url.URL, error) {
	u, err := url.Parse(ref)
	if err != nil || base == nil {
		return u, err
	}
	return base.ResolveReference(u), nil
}

func dupAttr(attrs []xml.Attr) bool {
	for i := 1; i < len(attrs); i++ {
		for j := range i {
			if attrs[i].Name == attrs[j].Name {
				return true
			}
		}
	}
	return false
}

// syntaxFault reports a well-formedness error with its position. The
// decoder's message can name elements or entities of the document: it is
// cut to a short line of printable ASCII.
func syntaxFault(d *xml.Decoder, err error) error {
	line, col := d.InputPos()
	msg := err.Error()
	var se *xml.SyntaxError
	if errors.As(err, &se) {
		msg = se.Msg
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of input"
	}
	return fault.Wrap(fault.InvalidInput, errNotWellFormed, "not well-formed XML at line %d, column %d: %s", line, col, printable(msg, 120))
}

func printable(s string, max int) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= max {
			b.WriteString("…")
			break
		}
		if r >= 0x20 && r < 0x7f {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Parse reads an RSS 0.90/0.91/0.92/2.0, RSS 1.0 (RDF), Atom 1.0 or Atom 0.3
// feed, repairing XML that is not well-formed where it can (see the
// package comment) and reporting each repair as a warning.
// sourceURL is the absolute http(s) URL the feed came from (relative links
// are resolved against it and any xml:base), or "" for none (relative
// links that no xml:base resolves are then left out, each with a
// warning); limit is how many entries to
// return, 1 to limits.FeedMaxEntries. Every entry is parsed and checked;
// those past limit are counted in OmittedEntries.
//
// It fails with limit when data is longer than limits.FeedMaxBytes, or
// holds more than limits.FeedMaxNodes nodes (elements, comments,
// processing instructions, declarations), elements nested deeper than
// limits.FeedMaxDepth, or an element with more than
// limits.FeedMaxAttributes attributes; with invalid_input for XML that
// cannot be repaired, any DTD but the RSS 0.91 DOCTYPE, a document that is
// not one of the formats, a bad source URL or a limit below 1.
func Parse(ctx context.Context, data []byte, sourceURL string, limit int) (*Feed, error) {
	source, err := parseSource(sourceURL)
	if err != nil {
		return nil, err
	}
	switch {
	case limit < 1:
		return nil, fault.New(fault.InvalidInput, "the entry limit must be at least 1 (at most %d)", limits.FeedMaxEntries)
	case limit > limits.FeedMaxEntries:
		return nil, fault.LimitExceeded("feed entry limit", limits.FeedMaxEntries, int64(limit))
	case len(data) > limits.FeedMaxBytes:
		return nil, fault.LimitExceeded("feed bytes", limits.FeedMaxBytes, int64(len(data)))
	}
	t, err := parseTree(ctx, data, source, nil)
	var rep *repairs
	if errors.Is(err, errNotWellFormed) {
		rep = &repairs{data: data}
		t, err = parseTree(ctx, data, source, rep)
	}
	if err != nil {
		return nil, err
	}
	f := &Feed{SourceURL: sourceURL, Nodes: t.nodes, Depth: t.depth, Warnings: t.warnings}
	if source != nil {
		f.SourceURL = source.String()
	}
	if rep != nil {
		f.Warnings = append(f.Warnings, rep.warnings()...)
	}
	if f.Warnings == nil {
		f.Warnings = []Warning{}
	}
	if t.htmlEntities {
		f.Warnings = append(f.Warnings, Warning{Code: WarnDTDEntities, Message: "the RSS 0.91 DOCTYPE was accepted without reading its DTD; its HTML entities were recognised"})
	}
	r := &reader{f: f}
	if err := r.read(t); err != nil {
		return nil, err
	}
	f.TotalEntries = len(r.entries)
	f.Duplicates = duplicates(r.entries)
	n := min(limit, len(r.entries))
	f.Entries = r.entries[:n:n]
	f.OmittedEntries = len(r.entries) - n
	if f.Entries == nil {
		f.Entries = []Entry{}
	}
	return f, nil
}
