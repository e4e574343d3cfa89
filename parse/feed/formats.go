package feed

import (
	"strconv"
	"strings"

	"github.com/capkit/capkit/fault"
)

// reader turns a tree into a Feed, collecting warnings.
type reader struct {
	f       *Feed
	entries []Entry
}

func (r *reader) warn(code string, entry int, msg string) {
	w := Warning{Code: code, Message: msg}
	if entry >= 0 {
		w.Entry = &entry
	}
	r.f.Warnings = append(r.f.Warnings, w)
}

// link resolves ref against e's base; it reports and drops links that do
// not parse or are not http(s).
func (r *reader) link(e *elem, ref string, entry int, what string) string {
	ref = strings.TrimSpace(ref)
	if ref == "" {
		return ""
	}
	u, err := resolve(e.base, ref)
	switch {
	case err == nil && absoluteHTTP(u):
		return u.String()
	case err == nil && e.base == nil && !u.IsAbs():
		r.warn(WarnLink, entry, "the "+what+" is relative and no base URL was given: left out (give the feed's URL)")
	default:
		r.warn(WarnLink, entry, "the "+what+" is not an http(s) URL: left out")
	}
	return ""
}

func (r *reader) date(e *elem, entry int, what string) *Date {
	if e == nil {
		return nil
	}
	d, weekday := parseDate(e.trimmed())
	if d.Problem != "" {
		r.warn(WarnDate, entry, "the "+what+" date names no instant ("+d.Problem+"): its original text is kept")
	}
	if weekday != "" {
		r.warn(WarnWeekday, entry, "the "+what+" date's weekday is wrong: "+weekday)
	}
	return d
}

// firstDate returns the first of the elements that is present.
func firstOf(es ...*elem) *elem {
	for _, e := range es {
		if e != nil {
			return e
		}
	}
	return nil
}

func (r *reader) read(t *tree) error {
	root := t.root
	switch {
	case root.name.Local == "rss":
		return r.rss(root)
	case root.name.Local == "RDF" && root.name.Space == nsRDF:
		return r.rdf(root)
	case root.name.Local == "feed" && root.name.Space == nsAtom:
		return r.atom(root, atom10)
	case root.name.Local == "feed" && root.name.Space == nsAtom03:
		r.warn(WarnAtom03, -1, "Atom 0.3 (the 2003 draft) read as Atom 1.0: modified as updated, issued as published, tagline as subtitle")
		return r.atom(root, atom03)
	}
	return fault.New(fault.InvalidInput, "not a feed: the root element is not rss, rdf:RDF or an Atom feed")
}

func (r *reader) rss(root *elem) error {
	switch v, _ := root.attr("", "version"); strings.TrimSpace(v) {
	case "0.91":
		r.f.Format = RSS091
	case "0.92", "0.93", "0.94":
		r.f.Format = RSS092
	case "2.0", "2.0.1":
		r.f.Format = RSS20
	default:
		r.f.Format = RSS
		r.warn(WarnNoVersion, -1, "the <rss> element has no known version attribute: read as RSS 2.0")
	}
	ch := root.child("", "channel")
	if ch == nil {
		r.warn(WarnNoChannel, -1, "the <rss> element has no <channel>: read as a feed with no channel data")
		ch = &elem{}
	}
	r.f.Title = ch.child("", "title").trimmed()
	r.f.Link = r.link(ch, ch.child("", "link").trimmed(), -1, "channel link")
	r.f.Description = ch.child("", "description").trimmed()
	r.f.Language = firstOf(ch.child("", "language"), ch.child(nsDC, "language")).trimmed()
	r.f.Updated = r.date(firstOf(ch.child("", "lastBuildDate"), ch.child("", "pubDate"), ch.child(nsDC, "date")), -1, "channel")
	items := append(ch.children("", "item"), root.children("", "item")...)
	for _, it := range items {
		i := len(r.entries)
		e := Entry{Index: i}
		e.Title = it.child("", "title").trimmed()
		e.Link = r.link(it, it.child("", "link").trimmed(), i, "item link")
		if g := it.child("", "guid"); g != nil {
			e.ID = g.trimmed()
			perma, _ := g.attr("", "isPermaLink")
			if e.Link == "" && e.ID != "" && !strings.EqualFold(strings.TrimSpace(perma), "false") {
				e.Link = r.link(g, e.ID, i, "permalink guid")
			}
		}
		if d := it.child("", "description"); d != nil {
			e.Summary, e.SummaryType = d.trimmed(), "html"
		}
		if c := it.child(nsContent, "encoded"); c != nil {
			e.Content, e.ContentType = c.trimmed(), "html"
		}
		e.Published = r.date(firstOf(it.child("", "pubDate"), it.child(nsDC, "date")), i, "item")
		for _, a := range append(it.children("", "author"), it.children(nsDC, "creator")...) {
			if s := a.trimmed(); s != "" {
				e.Authors = append(e.Authors, s)
			}
		}
		for _, c := range append(it.children("", "category"), it.children(nsDC, "subject")...) {
			if s := c.trimmed(); s != "" {
				e.Categories = append(e.Categories, s)
			}
		}
		for _, enc := range it.children("", "enclosure") {
			u, _ := enc.attr("", "url")
			typ, _ := enc.attr("", "type")
			length, _ := enc.attr("", "length")
			r.enclosure(&e, enc, u, typ, length)
		}
		r.add(e)
	}
	return nil
}

func (r *reader) rdf(root *elem) error {
	ns := nsRSS10
	r.f.Format = RSS10
	ch := root.child(ns, "channel")
	if ch == nil {
		ns, r.f.Format = nsRSS090, RSS090
		if ch = root.child(ns, "channel"); ch == nil {
			return fault.New(fault.InvalidInput, "not a feed: the rdf:RDF element has no RSS 1.0 or 0.90 channel")
		}
	}
	r.f.Title = ch.child(ns, "title").trimmed()
	r.f.Link = r.link(ch, ch.child(ns, "link").trimmed(), -1, "channel link")
	r.f.Description = ch.child(ns, "description").trimmed()
	r.f.Language = ch.child(nsDC, "language").trimmed()
	r.f.Updated = r.date(ch.child(nsDC, "date"), -1, "channel")
	for _, it := range root.children(ns, "item") {
		i := len(r.entries)
		e := Entry{Index: i}
		e.ID, _ = it.attr(nsRDF, "about")
		e.ID = strings.TrimSpace(e.ID)
		e.Title = it.child(ns, "title").trimmed()
		e.Link = r.link(it, it.child(ns, "link").trimmed(), i, "item link")
		if d := it.child(ns, "description"); d != nil {
			e.Summary, e.SummaryType = d.trimmed(), "html"
		}
		if c := it.child(nsContent, "encoded"); c != nil {
			e.Content, e.ContentType = c.trimmed(), "html"
		}
		e.Published = r.date(it.child(nsDC, "date"), i, "item")
		for _, a := range it.children(nsDC, "creator") {
			if s := a.trimmed(); s != "" {
				e.Authors = append(e.Authors, s)
			}
		}
		for _, c := range it.children(nsDC, "subject") {
			if s := c.trimmed(); s != "" {
				e.Categories = append(e.Categories, s)
			}
		}
		r.add(e)
	}
	return nil
}

// atomVersion names the elements that differ between Atom 1.0 and the
// Atom 0.3 draft.
type atomVersion struct {
	format                      Format
	ns, updated, published, sub string
}

var (
	atom10 = atomVersion{Atom10, nsAtom, "updated", "published", "subtitle"}
	atom03 = atomVersion{Atom03, nsAtom03, "modified", "issued", "tagline"}
)

func (r *reader) atom(root *elem, v atomVersion) error {
	ns := v.ns
	r.f.Format = v.format
	r.f.Title = titleText(root.child(ns, "title"))
	r.f.Link = r.atomLink(root, ns, -1, nil)
	r.f.Description, _ = textConstruct(root.child(ns, v.sub))
	r.f.Language, _ = root.attr(nsXML, "lang")
	r.f.ID = root.child(ns, "id").trimmed()
	r.f.Updated = r.date(root.child(ns, v.updated), -1, "feed")
	for _, en := range root.children(ns, "entry") {
		i := len(r.entries)
		e := Entry{Index: i}
		e.ID = en.child(ns, "id").trimmed()
		e.Title = titleText(en.child(ns, "title"))
		e.Link = r.atomLink(en, ns, i, &e)
		if s := en.child(ns, "summary"); s != nil {
			e.Summary, e.SummaryType = textConstruct(s)
		}
		if c := en.child(ns, "content"); c != nil {
			if src, ok := c.attr("", "src"); ok {
				e.ContentSource = r.link(c, src, i, "content src")
			} else {
				e.Content, e.ContentType = textConstruct(c)
			}
		}
		e.Published = r.date(en.child(ns, v.published), i, "entry published")
		e.Updated = r.date(en.child(ns, v.updated), i, "entry updated")
		for _, a := range en.children(ns, "author") {
			if s := a.child(ns, "name").trimmed(); s != "" {
				e.Authors = append(e.Authors, s)
			}
		}
		for _, c := range en.children(ns, "category") {
			if s, _ := c.attr("", "term"); strings.TrimSpace(s) != "" {
				e.Categories = append(e.Categories, strings.TrimSpace(s))
			}
		}
		r.add(e)
	}
	return nil
}

// atomLink returns the alternate link of e (rel absent or "alternate");
// with entry set, enclosure links are added to it.
func (r *reader) atomLink(e *elem, ns string, i int, entry *Entry) string {
	alt := ""
	for _, l := range e.children(ns, "link") {
		rel, _ := l.attr("", "rel")
		href, _ := l.attr("", "href")
		switch strings.TrimSpace(rel) {
		case "", "alternate":
			if alt == "" {
				alt = r.link(l, href, i, "link")
			}
		case "enclosure":
			if entry != nil {
				typ, _ := l.attr("", "type")
				length, _ := l.attr("", "length")
				r.enclosure(entry, l, href, typ, length)
			}
		}
	}
	return alt
}

func (r *reader) enclosure(e *Entry, el *elem, href, typ, length string) {
	u := r.link(el, href, e.Index, "enclosure")
	if u == "" {
		return
	}
	enc := Enclosure{URL: u, Type: strings.TrimSpace(typ)}
	if length = strings.TrimSpace(length); length != "" {
		n, err := strconv.ParseInt(length, 10, 64)
		if err != nil || n < 0 {
			r.warn(WarnLength, e.Index, "an enclosure length is not a byte count: left out")
		} else {
			enc.Length = n
		}
	}
	e.Enclosures = append(e.Enclosures, enc)
}

func (r *reader) add(e Entry) {
	if e.ID == "" && e.Link == "" {
		r.warn(WarnNoIdentity, e.Index, "the entry has neither id nor link: duplicates of it cannot be detected")
	}
	if e.Title == "" {
		r.warn(WarnUntitled, e.Index, "the entry has no title")
	}
	r.entries = append(r.entries, e)
}

// textConstruct reads an Atom text construct: its text and its type
// ("text", "html", "xhtml" or a media type). An xhtml construct's text is
// the character data of its XHTML, in order.
func textConstruct(e *elem) (string, string) {
	if e == nil {
		return "", ""
	}
	typ, _ := e.attr("", "type")
	typ = strings.TrimSpace(typ)
	switch typ {
	case "", "text", "text/plain":
		typ = "text"
	case "html", "text/html":
		typ = "html"
	case "xhtml", "application/xhtml+xml":
		typ = "xhtml"
	}
	return e.trimmed(), typ
}

// titleText is an Atom title as text: HTML and XHTML titles lose their
// markup.
func titleText(e *elem) string {
	s, typ := textConstruct(e)
	if typ == "html" {
		return htmlText(s)
	}
	return s
}
