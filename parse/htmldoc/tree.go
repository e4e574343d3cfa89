package htmldoc

import (
	"bytes"
	"context"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// node is one element or text node of the bounded tree. Only the attributes
// this package reads are kept.
type node struct {
	a      atom.Atom // 0 for text nodes and unknown elements
	name   string    // element name, lower case; "" for text
	text   string    // text nodes only
	attrs  []attr
	parent *node
	kids   []*node
	// hide is set when the element is hidden from readers (see hidden).
	hide bool
	// tlen and llen are the characters of visible text in the subtree and
	// inside its links, and commas the commas in it, set by measure.
	tlen, llen, commas int
}

type attr struct{ key, val string }

func (n *node) isText() bool { return n.name == "" }

func (n *node) attr(key string) (string, bool) {
	for _, a := range n.attrs {
		if a.key == key {
			return a.val, true
		}
	}
	return "", false
}

// keptAttrs are the attributes the extractor, the article scorer and the
// access-screen detector read. Others are dropped as they are tokenized.
var keptAttrs = map[string]bool{
	"id": true, "class": true, "href": true, "role": true, "style": true, "type": true,
	"itemprop": true, "src": true, "action": true, "name": true, "content": true, "property": true,
	"lang": true, "hidden": true, "ng-app": true, "ng-version": true, "data-reactroot": true,
	"data-sitekey": true,
}

// Element sets of the tree-construction rules (a subset of the HTML
// standard's, enough to place text in the right block).
var (
	voidElements = atomSet(atom.Area, atom.Base, atom.Br, atom.Col, atom.Embed, atom.Hr, atom.Img,
		atom.Input, atom.Keygen, atom.Link, atom.Meta, atom.Param, atom.Source, atom.Track, atom.Wbr)
	// closesP are start tags that close an open <p> in button scope.
	closesP = atomSet(atom.Address, atom.Article, atom.Aside, atom.Blockquote, atom.Center,
		atom.Details, atom.Dialog, atom.Dir, atom.Div, atom.Dl, atom.Fieldset, atom.Figcaption,
		atom.Figure, atom.Footer, atom.Form, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6,
		atom.Header, atom.Hgroup, atom.Hr, atom.Main, atom.Menu, atom.Nav, atom.Ol, atom.P, atom.Pre,
		atom.Listing, atom.Section, atom.Search, atom.Summary, atom.Table, atom.Ul, atom.Li, atom.Dd,
		atom.Dt, atom.Plaintext, atom.Xmp)
	// scopeBoundary ends an "element in scope" search.
	scopeBoundary = atomSet(atom.Html, atom.Table, atom.Td, atom.Th, atom.Caption, atom.Marquee,
		atom.Object, atom.Applet, atom.Template, atom.Svg, atom.Math)
	buttonScope  = union(scopeBoundary, atomSet(atom.Button))
	listScope    = union(scopeBoundary, atomSet(atom.Ol, atom.Ul))
	defListScope = union(scopeBoundary, atomSet(atom.Dl))
	tableScope   = atomSet(atom.Html, atom.Table, atom.Template)
	headings     = atomSet(atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6)
	// special elements stop the search for the element an unknown end
	// tag closes.
	special = atomSet(atom.Address, atom.Applet, atom.Area, atom.Article, atom.Aside, atom.Base,
		atom.Basefont, atom.Bgsound, atom.Blockquote, atom.Body, atom.Br, atom.Button, atom.Caption,
		atom.Center, atom.Col, atom.Colgroup, atom.Dd, atom.Details, atom.Dir, atom.Div, atom.Dl,
		atom.Dt, atom.Embed, atom.Fieldset, atom.Figcaption, atom.Figure, atom.Footer, atom.Form,
		atom.Frame, atom.Frameset, atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6, atom.Head,
		atom.Header, atom.Hgroup, atom.Hr, atom.Html, atom.Iframe, atom.Img, atom.Input, atom.Keygen,
		atom.Li, atom.Link, atom.Listing, atom.Main, atom.Marquee, atom.Menu, atom.Meta, atom.Nav,
		atom.Noembed, atom.Noframes, atom.Noscript, atom.Object, atom.Ol, atom.P, atom.Param,
		atom.Plaintext, atom.Pre, atom.Script, atom.Search, atom.Section, atom.Select, atom.Source,
		atom.Style, atom.Summary, atom.Table, atom.Tbody, atom.Td, atom.Template, atom.Textarea,
		atom.Tfoot, atom.Th, atom.Thead, atom.Title, atom.Tr, atom.Track, atom.Ul, atom.Wbr, atom.Xmp)
)

type set map[atom.Atom]bool

func atomSet(as ...atom.Atom) set {
	s := make(set, len(as))
	for _, a := range as {
		s[a] = true
	}
	return s
}

func union(a, b set) set {
	s := make(set, len(a)+len(b))
	for k := range a {
		s[k] = true
	}
	for k := range b {
		s[k] = true
	}
	return s
}

// builder builds the tree from the token stream, counting nodes and depth
// as tokens arrive so that no input can make it hold more than the limits.
type builder struct {
	slab    []node // nodes are allocated in blocks, not one by one
	root    *node
	stack   []*node // open elements; stack[0] is root
	nodes   int
	depth   int // deepest open-element count reached
	foreign int // open svg/math elements
}

// build tokenizes data (UTF-8) into a tree. It fails with limit when the
// node count, the depth or an element's attribute count passes its limit.
func build(ctx context.Context, data []byte) (*builder, error) {
	b := &builder{root: &node{name: "#document"}}
	b.stack = []*node{b.root}
	z := html.NewTokenizer(bytes.NewReader(data))
	for i := 0; ; i++ {
		if i&1023 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fault.As(err)
			}
		}
		tt := z.Next()
		switch tt {
		case html.ErrorToken:
			// The only error from a bytes.Reader is io.EOF: the tokenizer
			// accepts any byte sequence, as browsers do.
			return b, nil
		case html.TextToken:
			if err := b.count(); err != nil {
				return nil, err
			}
			b.appendText(string(z.Text()))
		case html.CommentToken, html.DoctypeToken:
			if err := b.count(); err != nil {
				return nil, err
			}
		case html.StartTagToken, html.SelfClosingTagToken:
			if err := b.count(); err != nil {
				return nil, err
			}
			if raw := z.Raw(); len(raw) > 2*limits.HTMLMaxAttributes+2 {
				// Each attribute takes at least two bytes, so only a tag
				// this long can hold more than the limit. Count them as
				// written: the tokenizer folds duplicates silently.
				if n := countRawAttrs(raw); n > limits.HTMLMaxAttributes {
					return nil, fault.LimitExceeded("HTML element attributes (duplicates included)", limits.HTMLMaxAttributes, int64(n))
				}
			}
			name, more := z.TagName()
			n := b.newNode()
			n.a = atom.Lookup(name)
			n.name = n.a.String()
			if n.a == 0 {
				n.name = string(name)
			}
			for more {
				var k, v []byte
				k, v, more = z.TagAttr()
				if keptAttrs[string(k)] {
					n.attrs = append(n.attrs, attr{string(k), string(v)})
				}
			}
			n.hide = hiddenAttrs(n)
			if err := b.start(n, tt == html.SelfClosingTagToken); err != nil {
				return nil, err
			}
		case html.EndTagToken:
			name, _ := z.TagName()
			a := atom.Lookup(name)
			if a == atom.Br {
				// </br> is a <br>, as browsers read it.
				if err := b.count(); err != nil {
					return nil, err
				}
				n := b.newNode()
				n.a, n.name = atom.Br, "br"
				b.appendChild(n)
				continue
			}
			b.end(a, string(name))
		}
	}
}

// newNode returns a zeroed node from the current block.
func (b *builder) newNode() *node {
	if len(b.slab) == 0 {
		b.slab = make([]node, 256)
	}
	n := &b.slab[0]
	b.slab = b.slab[1:]
	return n
}

func (b *builder) count() error {
	b.nodes++
	if b.nodes > limits.HTMLMaxNodes {
		return fault.LimitExceeded("HTML nodes", limits.HTMLMaxNodes, 0)
	}
	return nil
}

func (b *builder) top() *node { return b.stack[len(b.stack)-1] }

func (b *builder) appendChild(n *node) {
	p := b.top()
	n.parent = p
	p.kids = append(p.kids, n)
}

func (b *builder) appendText(s string) {
	n := b.newNode()
	n.text = s
	b.appendChild(n)
}

func (b *builder) has(a atom.Atom) bool {
	for _, n := range b.stack {
		if n.a == a {
			return true
		}
	}
	return false
}

func (b *builder) start(n *node, selfClosing bool) error {
	switch n.a {
	case atom.Html, atom.Head, atom.Body:
		if b.has(n.a) {
			return nil // a second <html>, <head> or <body> adds nothing
		}
	}
	if b.foreign == 0 {
		if closesP[n.a] {
			b.closeInScope(atom.P, buttonScope)
		}
		switch n.a {
		case atom.Li:
			b.closeInScope(atom.Li, listScope)
		case atom.Dd, atom.Dt:
			b.closeInScope(atom.Dd, defListScope)
			b.closeInScope(atom.Dt, defListScope)
		case atom.Tr:
			b.closeInScope(atom.Tr, tableScope)
		case atom.Td, atom.Th:
			b.closeCell()
		case atom.A:
			b.closeInScope(atom.A, scopeBoundary)
		case atom.Option, atom.Optgroup:
			if b.top().a == atom.Option {
				b.pop()
			}
			if n.a == atom.Optgroup && b.top().a == atom.Optgroup {
				b.pop()
			}
		case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
			if headings[b.top().a] {
				b.pop()
			}
		}
	}
	b.appendChild(n)
	if voidElements[n.a] || selfClosing && b.foreign > 0 {
		return nil
	}
	if len(b.stack) > limits.HTMLMaxDepth {
		return fault.LimitExceeded("HTML nesting depth", limits.HTMLMaxDepth, 0)
	}
	b.stack = append(b.stack, n)
	b.depth = max(b.depth, len(b.stack)-1)
	if n.a == atom.Svg || n.a == atom.Math {
		b.foreign++
	}
	return nil
}

func (b *builder) pop() {
	n := b.stack[len(b.stack)-1]
	if n.a == atom.Svg || n.a == atom.Math {
		b.foreign--
	}
	b.stack = b.stack[:len(b.stack)-1]
}

// popTo pops the stack down to and including index i (i ≥ 1).
func (b *builder) popTo(i int) {
	for len(b.stack) > i {
		b.pop()
	}
}

// closeInScope closes the nearest open a unless a boundary element comes
// first, and reports whether it did.
func (b *builder) closeInScope(a atom.Atom, boundary set) bool {
	for i := len(b.stack) - 1; i >= 1; i-- {
		switch n := b.stack[i]; {
		case n.a == a:
			b.popTo(i)
			return true
		case boundary[n.a]:
			return false
		}
	}
	return false
}

func (b *builder) closeCell() {
	for i := len(b.stack) - 1; i >= 1; i-- {
		switch b.stack[i].a {
		case atom.Td, atom.Th:
			b.popTo(i)
			return
		case atom.Tr, atom.Table, atom.Html, atom.Template:
			return
		}
	}
}

func (b *builder) end(a atom.Atom, name string) {
	switch {
	case a == atom.Html || a == atom.Body:
		// Content after </body> still belongs to the body.
	case a == atom.P:
		b.closeInScope(atom.P, buttonScope)
	case a == atom.Li:
		b.closeInScope(atom.Li, listScope)
	case a == atom.Dd || a == atom.Dt:
		b.closeInScope(a, defListScope)
	case a == atom.Table || a == atom.Td || a == atom.Th || a == atom.Tr || a == atom.Thead || a == atom.Tbody || a == atom.Tfoot || a == atom.Caption:
		b.closeInScope(a, tableScope)
	case headings[a]:
		// </h2> closes whichever heading is open, as browsers do.
		for i := len(b.stack) - 1; i >= 1; i-- {
			if headings[b.stack[i].a] {
				b.popTo(i)
				return
			}
			if scopeBoundary[b.stack[i].a] {
				return
			}
		}
	case special[a]:
		b.closeInScope(a, scopeBoundary)
	default:
		// Any other end tag closes the nearest open element of its name,
		// unless a special element is open above it.
		for i := len(b.stack) - 1; i >= 1; i-- {
			n := b.stack[i]
			if n.name == name {
				b.popTo(i)
				return
			}
			if special[n.a] {
				return
			}
		}
	}
}

func isHTMLSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\f'
}

// countRawAttrs counts the attributes of a raw start tag as written,
// duplicates included, following the tokenizer's attribute grammar.
func countRawAttrs(raw []byte) int {
	i, n, count := 1, len(raw), 0
	for i < n && !isHTMLSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	for i < n {
		for i < n && isHTMLSpace(raw[i]) {
			i++
		}
		if i >= n || raw[i] == '>' {
			break
		}
		start := i
		for i < n {
			c := raw[i]
			if c == '=' && i == start {
				i++
				continue
			}
			if isHTMLSpace(c) || c == '/' || c == '>' || c == '=' {
				break
			}
			i++
		}
		if i > start {
			count++
		}
		for i < n && isHTMLSpace(raw[i]) {
			i++
		}
		if i >= n {
			break
		}
		switch raw[i] {
		case '/':
			i++
			continue
		case '=':
		default:
			continue
		}
		i++
		for i < n && isHTMLSpace(raw[i]) {
			i++
		}
		if i >= n {
			break
		}
		switch q := raw[i]; q {
		case '>':
		case '"', '\'':
			i++
			for i < n && raw[i] != q {
				i++
			}
			i++
		default:
			for i < n && !isHTMLSpace(raw[i]) && raw[i] != '>' {
				i++
			}
		}
	}
	return count
}

// classTokens returns the id and class attribute values of n, lower-cased,
// as one string for substring matching.
func (n *node) idClass() string {
	id, _ := n.attr("id")
	class, _ := n.attr("class")
	if id == "" && class == "" {
		return ""
	}
	return strings.ToLower(id + " " + class)
}
