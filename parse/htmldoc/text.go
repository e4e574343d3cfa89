package htmldoc

import (
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html/atom"
)

// skipped elements hold no readable text of this document: scripts and
// styles, metadata, embedded documents and media, form controls' options.
var skipped = atomSet(atom.Script, atom.Style, atom.Template, atom.Noscript, atom.Head,
	atom.Svg, atom.Math, atom.Iframe, atom.Object, atom.Embed, atom.Canvas, atom.Select,
	atom.Textarea, atom.Datalist, atom.Audio, atom.Video, atom.Frameset, atom.Noembed,
	atom.Noframes, atom.Title)

// frames are skipped elements whose content is another document.
var frames = atomSet(atom.Iframe, atom.Object, atom.Embed, atom.Frameset)

// blockElements start and end a block of text.
var blockElements = atomSet(atom.Address, atom.Article, atom.Aside, atom.Body, atom.Center,
	atom.Details, atom.Dialog, atom.Dir, atom.Div, atom.Fieldset, atom.Figcaption, atom.Figure,
	atom.Footer, atom.Form, atom.Header, atom.Hgroup, atom.Hr, atom.Html, atom.Legend, atom.Main,
	atom.Nav, atom.Section, atom.Search, atom.Summary, atom.Caption, atom.Tr, atom.Td, atom.Th,
	atom.Thead, atom.Tbody, atom.Tfoot, atom.Option, atom.Optgroup)

// hidden reports whether n is hidden from readers.
func hidden(n *node) bool { return n.hide }

// hiddenAttrs reports whether n's attributes hide it: the hidden attribute
// or an inline style with display:none or visibility:hidden.
func hiddenAttrs(n *node) bool {
	if _, ok := n.attr("hidden"); ok {
		return true
	}
	style, ok := n.attr("style")
	if !ok {
		return false
	}
	s := strings.ToLower(strings.Join(strings.FieldsFunc(style, func(r rune) bool { return r < utf8.RuneSelf && isHTMLSpace(byte(r)) }), ""))
	return strings.Contains(s, "display:none") || strings.Contains(s, "visibility:hidden")
}

// collapsedLen is the number of characters of s once HTML whitespace runs
// become single spaces, not counting leading and trailing space.
func collapsedLen(s string) int {
	n, space, started := 0, false, false
	for i := 0; i < len(s); {
		c := s[i]
		if isHTMLSpace(c) {
			space = true
			i++
			continue
		}
		if space && started {
			n++
		}
		space, started = false, true
		if c < utf8.RuneSelf {
			i++
		} else {
			_, w := utf8.DecodeRuneInString(s[i:])
			i += w
		}
		n++
	}
	return n
}

// measure sets tlen and llen on every node of the subtree: characters of
// visible text, and of visible text inside links.
func measure(n *node, inLink bool) {
	if n.isText() {
		n.tlen = collapsedLen(n.text)
		n.commas = strings.Count(n.text, ",")
		if inLink {
			n.llen = n.tlen
		}
		return
	}
	n.tlen, n.llen, n.commas = 0, 0, 0
	if skipped[n.a] || hidden(n) {
		return
	}
	link := inLink || n.a == atom.A
	for _, k := range n.kids {
		measure(k, link)
		n.tlen += k.tlen
		n.llen += k.llen
		n.commas += k.commas
	}
}

// visibleText is the text a reader sees in n, whitespace collapsed. Links
// nested in n are left out (they have their own text), so that the text of
// all links together is read in one pass over the page.
func visibleText(n *node) string {
	var b strings.Builder
	space := false
	var rec func(*node)
	rec = func(n *node) {
		if n.isText() {
			for i := 0; i < len(n.text); i++ {
				c := n.text[i]
				if isHTMLSpace(c) {
					space = true
					continue
				}
				if space && b.Len() > 0 {
					b.WriteByte(' ')
				}
				space = false
				b.WriteByte(c)
			}
			return
		}
		if skipped[n.a] || hidden(n) {
			return
		}
		block := n.a == atom.Br || blockElements[n.a] || n.a == atom.P || n.a == atom.Li || headings[n.a]
		space = space || block
		for _, k := range n.kids {
			if k.a != atom.A {
				rec(k)
			}
		}
		space = space || block
	}
	rec(n)
	return b.String()
}

// extractor turns a subtree into blocks and links.
type extractor struct {
	base *url.URL // nil: links kept as written

	// marks, when set, reports elements whose blocks are flagged in
	// meta, which then describes every block for access-screen
	// detection.
	marks            func(*node) bool
	meta             []blockMeta
	anchors          []string // the text of each link, in order
	anchorFrom       int      // the first anchor of the block being built
	inMark, inChrome int

	blocks   []Block
	links    []Link
	linkNode *node  // the element of the last link recorded
	buf      []byte // the block being built; reused
	space    bool

	listDepth, itemDepth, quoteDepth, pre int

	tables, hiddenN, framesN, unresolved, badLinks int
}

func (x *extractor) walk(n *node) {
	if n.isText() {
		x.text(n.text)
		return
	}
	if frames[n.a] {
		x.framesN++
	}
	if skipped[n.a] {
		return
	}
	if hidden(n) {
		x.hiddenN++
		return
	}
	if x.marks != nil && x.marks(n) {
		x.flush()
		x.inMark++
		defer func() { x.flush(); x.inMark-- }()
	}
	if x.marks != nil && chromeElement(n) {
		x.flush()
		x.inChrome++
		defer func() { x.flush(); x.inChrome-- }()
	}
	switch {
	case headings[n.a]:
		x.flush()
		x.kids(n)
		x.flushAs(Heading, int(n.name[1]-'0'))
	case n.a == atom.P:
		x.flush()
		x.kids(n)
		x.flush()
	case n.a == atom.Li || n.a == atom.Dt || n.a == atom.Dd:
		x.flush()
		x.itemDepth++
		x.kids(n)
		x.flush()
		x.itemDepth--
	case n.a == atom.Ul || n.a == atom.Ol || n.a == atom.Dl || n.a == atom.Menu:
		x.flush()
		x.listDepth++
		x.kids(n)
		x.flush()
		x.listDepth--
	case n.a == atom.Blockquote:
		x.flush()
		x.quoteDepth++
		x.kids(n)
		x.flush()
		x.quoteDepth--
	case n.a == atom.Pre || n.a == atom.Listing || n.a == atom.Xmp || n.a == atom.Plaintext:
		x.flush()
		x.pre++
		x.kids(n)
		x.flushAs(Pre, 0)
		x.pre--
	case n.a == atom.Table:
		x.flush()
		if layoutTable(n) {
			x.kids(n)
		} else {
			x.table(n)
		}
		x.flush()
	case n.a == atom.Br:
		x.newline()
	case n.a == atom.A:
		x.link(n)
		x.anchor(n)
		x.kids(n)
	case blockElements[n.a]:
		x.flush()
		x.kids(n)
		x.flush()
	default:
		x.kids(n)
	}
}

func (x *extractor) kids(n *node) {
	for _, k := range n.kids {
		x.walk(k)
	}
}

// text appends inline text, collapsing whitespace outside pre.
func (x *extractor) text(s string) {
	if x.pre > 0 {
		if len(x.buf) == 0 {
			// A newline right after <pre> is not content.
			s = strings.TrimPrefix(strings.TrimPrefix(s, "\r"), "\n")
		}
		x.buf = append(x.buf, s...)
		return
	}
	for i := 0; i < len(s); {
		if isHTMLSpace(s[i]) {
			x.space = true
			i++
			continue
		}
		j := i + 1
		for j < len(s) && !isHTMLSpace(s[j]) {
			j++
		}
		if x.space && len(x.buf) > 0 && x.buf[len(x.buf)-1] != '\n' {
			x.buf = append(x.buf, ' ')
		}
		x.space = false
		x.buf = append(x.buf, s[i:j]...)
		i = j
	}
}

func (x *extractor) newline() {
	if len(x.buf) > 0 {
		x.buf = append(x.buf, '\n')
	}
	x.space = false
}

// flush ends the current block as the kind its context implies.
func (x *extractor) flush() {
	switch {
	case x.pre > 0:
		x.flushAs(Pre, 0)
	case x.quoteDepth > 0:
		x.flushAs(Quote, 0)
	case x.itemDepth > 0:
		x.flushAs(ListItem, max(x.listDepth, 1))
	default:
		x.flushAs(Paragraph, 0)
	}
}

func (x *extractor) flushAs(kind BlockKind, level int) {
	if len(x.buf) == 0 {
		x.space = false
		return
	}
	s := string(x.buf)
	x.buf = x.buf[:0]
	x.space = false
	if kind == Pre {
		s = strings.TrimRight(s, " \t\r\n\f")
	} else {
		s = strings.TrimSpace(strings.ReplaceAll(strings.TrimRight(s, "\n"), " \n", "\n"))
	}
	if s == "" {
		return
	}
	x.blocks = append(x.blocks, Block{Kind: kind, Level: level, Text: s})
	if x.marks != nil {
		x.addMeta(x.anchorFrom)
	}
}

// addMeta describes the block just added, whose links are the anchors
// from on.
func (x *extractor) addMeta(from int) {
	x.meta = append(x.meta, blockMeta{marked: x.inMark > 0, chrome: x.inChrome > 0, anchorFrom: int32(from), anchorTo: int32(len(x.anchors))})
	x.anchorFrom = len(x.anchors)
}

// layoutTable reports whether a table lays out blocks (a cell holds
// paragraphs, lists, headings or tables, or the table says it is for
// presentation) rather than holding data.
func layoutTable(t *node) bool {
	if role, _ := t.attr("role"); role == "presentation" || role == "none" {
		return true
	}
	var blocky func(n *node, inCell bool) bool
	blocky = func(n *node, inCell bool) bool {
		for _, k := range n.kids {
			if k.isText() {
				continue
			}
			if inCell {
				switch k.a {
				case atom.P, atom.Div, atom.Ul, atom.Ol, atom.Dl, atom.Table, atom.Blockquote, atom.Pre,
					atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Article, atom.Section:
					return true
				}
			}
			if k.a != atom.Table && blocky(k, inCell || k.a == atom.Td || k.a == atom.Th) {
				return true
			}
		}
		return false
	}
	return blocky(t, false)
}

// table flattens a data table into one TableRow block per row.
func (x *extractor) table(t *node) {
	x.tables++
	var rows func(n *node)
	rows = func(n *node) {
		for _, k := range n.kids {
			switch {
			case k.isText():
				x.text(k.text)
			case k.a == atom.Tr && !hidden(k):
				x.flush()
				x.row(k)
			case k.a == atom.Thead || k.a == atom.Tbody || k.a == atom.Tfoot:
				if !hidden(k) {
					rows(k)
				}
			default:
				x.walk(k)
			}
		}
	}
	rows(t)
	x.flush()
}

func (x *extractor) row(tr *node) {
	var cells []string
	from := x.anchorFrom // the row's first link
	for _, c := range tr.kids {
		if c.isText() || c.a != atom.Td && c.a != atom.Th {
			if !c.isText() {
				x.walk(c)
			}
			continue
		}
		if hidden(c) {
			x.hiddenN++
			continue
		}
		// A cell's content goes through the extractor (links, nested
		// tables) and is then joined back into one line.
		mark := len(x.blocks)
		x.flush()
		x.kids(c)
		x.flush()
		var parts []string
		for _, b := range x.blocks[mark:] {
			parts = append(parts, strings.ReplaceAll(b.Text, "\n", " "))
		}
		if x.marks != nil {
			x.meta = x.meta[:mark]
		}
		x.blocks = x.blocks[:mark]
		cells = append(cells, strings.Join(parts, " "))
	}
	// Empty cells at either end carry no text; between others they keep
	// the columns apart.
	for len(cells) > 0 && cells[len(cells)-1] == "" {
		cells = cells[:len(cells)-1]
	}
	for len(cells) > 0 && cells[0] == "" {
		cells = cells[1:]
	}
	if len(cells) == 0 {
		return
	}
	x.blocks = append(x.blocks, Block{Kind: TableRow, Text: strings.Join(cells, " | ")})
	if x.marks != nil {
		x.addMeta(from)
	}
}

// anchor records the text of link n for screen detection (which counts
// no phrase of a link's): the link's as recorded, or its visible text.
func (x *extractor) anchor(n *node) {
	if x.marks == nil {
		return
	}
	text := ""
	if l := len(x.links); l > 0 && x.linkNode == n {
		text = x.links[l-1].Text
	} else {
		text = visibleText(n)
	}
	if text != "" {
		x.anchors = append(x.anchors, text)
	}
}

// link records n's href, resolved against the base when there is one.
func (x *extractor) link(n *node) {
	href, ok := n.attr("href")
	href = strings.TrimSpace(href)
	if !ok || href == "" || href[0] == '#' {
		return // no target, or a place in this page
	}
	u, err := url.Parse(href)
	if err != nil {
		x.badLinks++
		return
	}
	if x.base != nil {
		u = x.base.ResolveReference(u)
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "mailto":
	case "":
		x.unresolved++
	default:
		x.badLinks++ // javascript:, data:, vbscript:, app schemes
		return
	}
	x.links = append(x.links, Link{Text: visibleText(n), URL: u.String()})
	x.linkNode = n
}
