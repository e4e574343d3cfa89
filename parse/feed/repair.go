package feed

import (
	"bytes"
	"encoding/xml"
	"fmt"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Real feeds are often not well-formed: a bare "&", an HTML entity such as
// &copy; without a DTD, a closing tag that does not match. A document the
// strict decoder refuses is read again by encoding/xml's lenient mode
// (Strict false, HTML entities known), as a lenient feed reader would, and
// every repair is reported as a warning with its line and column. The
// lenient mode leaves unknown entities as text and closes elements whose
// end tag is missing or wrong; the bounds and the DTD refusal are the same
// in both modes.

// repairs collects the warnings of a lenient read: at most
// limits.FeedMaxRepairWarnings of them, and a count of the rest.
type repairs struct {
	data  []byte
	list  []Warning
	more  int
	stray string // the name of the last mismatched end tag
}

func (r *repairs) add(off int64, format string, args ...any) {
	if len(r.list) >= limits.FeedMaxRepairWarnings {
		r.more++
		return
	}
	line, col := position(r.data, off)
	r.list = append(r.list, Warning{Code: WarnRepaired, Message: fmt.Sprintf("line %d, column %d: ", line, col) + fmt.Sprintf(format, args...)})
}

// warnings are the repairs, with one more line for those not listed.
func (r *repairs) warnings() []Warning {
	if r.more > 0 {
		return append(r.list, Warning{Code: WarnRepaired, Message: fmt.Sprintf("%d more repairs of the same kinds are not listed", r.more)})
	}
	return r.list
}

// position is the 1-based line and column of byte off.
func position(data []byte, off int64) (int, int) {
	off = min(max(off, 0), int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte{'\n'}) + 1
	return line, int(off) - (bytes.LastIndexByte(before, '\n') + 1) + 1
}

// entities reports each "&" in character data or attribute values of
// data[from:to] that is not a reference XML defines: a bare "&" (kept as
// text) or an HTML entity (replaced by its character).
func (r *repairs) entities(from, to int64) {
	seg := r.data[from:to]
	for i := 0; i < len(seg); i++ {
		if seg[i] != '&' {
			continue
		}
		name, ok := entityName(seg[i+1:])
		switch {
		case ok && (xmlEntity(name) || name[0] == '#'):
		case ok && xml.HTMLEntity[name] != "":
			r.add(from+int64(i), "the HTML entity &%s; is not defined by XML: read as %q", name, xml.HTMLEntity[name])
		case ok:
			r.add(from+int64(i), "the entity &%s; is not defined: kept as text", name)
		default:
			r.add(from+int64(i), "a bare \"&\" is not escaped: kept as text")
		}
	}
}

// entityName reads "name;" after an "&".
func entityName(b []byte) (string, bool) {
	for j := 0; j < len(b) && j < 32; j++ {
		c := b[j]
		switch {
		case c == ';':
			return string(b[:j]), j > 0
		case c == '#' && j == 0, c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
		default:
			return "", false
		}
	}
	return "", false
}

func xmlEntity(name string) bool {
	switch name {
	case "amp", "lt", "gt", "quot", "apos":
		return true
	}
	return false
}

// endTag reports an end element the lenient decoder produced for the open
// element: raw is the input it consumed. A mismatched end tag closes the
// open element and is then applied again, closing the next ones until one
// matches; each element closed that way is reported.
func (r *repairs) endTag(open xml.Name, raw []byte, off int64) {
	i := bytes.Index(raw, []byte("</"))
	if i < 0 {
		if open.Local == r.stray {
			r.stray = ""
		} else {
			r.add(off, "<%s> closed early by the stray end tag </%s>", open.Local, printable(r.stray, 40))
		}
		return
	}
	name := raw[i+2:]
	if j := bytes.IndexAny(name, " \t\r\n>"); j >= 0 {
		name = name[:j]
	}
	if k := bytes.IndexByte(name, ':'); k >= 0 {
		name = name[k+1:]
	}
	if string(name) != open.Local {
		r.stray = string(name)
		r.add(off, "the end tag </%s> does not match the open <%s>: <%s> closed here", printable(r.stray, 40), open.Local, open.Local)
	}
}

// errNotWellFormed marks the strict read's syntax failures: those a
// lenient read may repair.
var errNotWellFormed = fault.NewMark("feed: not well-formed XML")

// token inspects one token of a lenient read: raw input data[from:to].
func (r *repairs) token(tok xml.Token, stack []*elem, from, to int64) {
	raw := r.data[from:to]
	switch tk := tok.(type) {
	case xml.StartElement:
		r.entities(from, to)
	case xml.CharData:
		if !bytes.HasPrefix(raw, []byte("<![CDATA[")) {
			r.entities(from, to)
		}
	case xml.EndElement:
		if len(stack) > 0 {
			r.endTag(tk.Name, raw, from)
		}
	}
}
