package htmldoc

import (
	"bytes"
	"context"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
	"golang.org/x/net/html/charset"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Options configure Parse. A nil *Options means the zero value.
type Options struct {
	// BaseURL is the absolute http or https URL the page came from. When
	// set, links are resolved against it (adjusted by a <base href> in the
	// page, as browsers do); when empty, relative links are returned as
	// written with a links_unresolved warning.
	BaseURL string
	// ContentType is the media type the page was served with, if known.
	// Its charset parameter decides the encoding of the bytes.
	ContentType string
	// DisableAccessScreenRefusal returns a page the check takes for a
	// login wall, consent wall, bot challenge, paywall or error page as a
	// document, with an access_screen warning saying what the check found,
	// instead of failing: for a caller that knows the page better (a page
	// the check mistakes for a screen). The risk: a caller (or a model)
	// reads the screen's text as if it were the page's content.
	DisableAccessScreenRefusal bool
}

// Parse reads an HTML page and returns the selected content.
//
// It fails with limit when data is longer than limits.HTMLMaxBytes, or
// parsing meets more than limits.HTMLMaxNodes nodes, elements nested deeper
// than limits.HTMLMaxDepth or an element with more than
// limits.HTMLMaxAttributes attributes; with integrity (*AccessScreenError)
// when the page is an access screen; with invalid_input (*ArticleError)
// when sel is SelectArticle and the page has no article; with invalid_input
// for a bad selection or base URL. Any byte sequence is otherwise accepted,
// as browsers accept it.
func Parse(ctx context.Context, data []byte, sel Selection, opts *Options) (*Document, error) {
	if opts == nil {
		opts = &Options{}
	}
	base, err := checkInput(data, sel, opts)
	if err != nil {
		return nil, err
	}
	doc := &Document{Selection: sel, Blocks: []Block{}, Links: []Link{}, Warnings: []Warning{}}
	text, warn := decode(data, opts.ContentType)
	if warn != "" {
		doc.warn(WarnEncoding, warn)
	}
	b, err := build(ctx, text)
	if err != nil {
		return nil, err
	}
	root := b.root
	doc.Nodes, doc.Depth = b.nodes, b.depth
	measure(root, false)
	page := pageInfo(root)
	doc.Title, doc.Lang = page.title, page.lang
	base = page.resolveBase(base)
	if base != nil {
		doc.BaseURL = base.String()
	}
	shell := page.shellReason(root)
	x, err := doc.selectContent(root, base, shell, sel, opts)
	if err != nil {
		return nil, err
	}
	doc.Blocks, doc.Links = x.blocks, x.links
	if doc.Blocks == nil {
		doc.Blocks = []Block{}
	}
	if doc.Links == nil {
		doc.Links = []Link{}
	}
	doc.report(x, page, shell)
	return doc, nil
}

// checkInput checks the selection, the base URL and the size.
func checkInput(data []byte, sel Selection, opts *Options) (*url.URL, error) {
	if _, err := ParseSelection(string(sel)); err != nil {
		return nil, err
	}
	var base *url.URL
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fault.New(fault.InvalidInput, "base URL must be an absolute http or https URL")
		}
		base = u
	}
	if len(data) > limits.HTMLMaxBytes {
		return nil, fault.LimitExceeded("HTML bytes", limits.HTMLMaxBytes, int64(len(data)))
	}
	return base, nil
}

// resolveBase applies the page's <base href> to the caller's base URL
// (only when the caller gave one).
func (p *page) resolveBase(base *url.URL) *url.URL {
	if base == nil || p.baseHref == "" {
		return base
	}
	if u, err := base.Parse(strings.TrimSpace(p.baseHref)); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		return u
	}
	return base
}

// selectContent walks the article or the whole page, refusing access
// screens and pages without the article asked for.
//
// Article selection comes first: an article with enough prose of its own
// settles the access-screen question (a screen has less prose in the whole
// page), so the whole page need not be walked.
func (doc *Document) selectContent(root *node, base *url.URL, shell string, sel Selection, opts *Options) (*extractor, error) {
	var x *extractor
	var info *ArticleInfo
	none := ""
	screened := false
	if sel == SelectArticle {
		var n *node
		var method string
		n, method, none = chooseArticle(root)
		if n != nil {
			info = articleInfo(n, method, root.tlen)
		}
		if none == "" && n != nil {
			x = &extractor{base: base, marks: markedElement, inMark: markedAncestors(n)}
			x.walk(n)
			none = checkArticle(n, x.blocks, info)
			screened = screened || x.proseAtLeast(screenProseChars)
		}
	}
	if !screened || sel == SelectText {
		whole := &extractor{base: base, marks: markedElement}
		whole.walk(root)
		if se := detectScreen(root, doc.Title, whole); se != nil {
			if !opts.DisableAccessScreenRefusal {
				return nil, se
			}
			doc.warn(WarnAccessScreen, se.overridden())
		}
		if sel == SelectText {
			x = whole
		}
	}
	if sel == SelectArticle {
		if none != "" {
			if shell != "" {
				none = shell + "; " + none
			}
			return nil, newArticleError(none, info)
		}
		doc.Article = info
	}
	return x, nil
}

// report adds the warnings about what the extraction left out or kept as
// written.
func (doc *Document) report(x *extractor, page *page, shell string) {
	if shell != "" {
		doc.warn(WarnNeedsScripts, shell)
	}
	if page.noscriptNotice {
		doc.warn(WarnNoscriptNotice, "a <noscript> notice asks for JavaScript: parts of the page may be rendered by scripts")
	}
	for _, c := range []struct {
		n         int
		code, msg string
	}{
		{x.tables, WarnTableFlattened, "%d table(s) flattened to one row per block, cells joined by \" | \"; spans, header associations and nested tables are lost"},
		{x.hiddenN, WarnHiddenSkipped, "%d hidden element(s) left out (hidden attribute, display:none or visibility:hidden)"},
		{x.framesN, WarnFramesSkipped, "%d iframe, object or embed element(s) hold other documents, not included"},
		{x.unresolved, WarnLinksUnresolved, "%d relative link(s) kept as written: give a base URL to resolve them"},
		{x.badLinks, WarnLinksSkipped, "%d link(s) with a script, data or other non-web scheme, or an unparseable href, left out"},
	} {
		if c.n > 0 {
			doc.warn(c.code, fmt.Sprintf(c.msg, c.n))
		}
	}
}

func (d *Document) warn(code, msg string) {
	d.Warnings = append(d.Warnings, Warning{Code: code, Message: msg})
}

// decode returns data as UTF-8 and a warning when that took more than
// removing a byte order mark. Valid UTF-8 without a BOM or a declared
// charset is read as UTF-8; otherwise the encoding is the one the BOM, the
// content type or a <meta> declares, or windows-1252, as the HTML standard
// prescribes. Invalid UTF-8 becomes U+FFFD.
func decode(data []byte, contentType string) ([]byte, string) {
	enc, name, certain := charset.DetermineEncoding(data, contentType)
	if name == "utf-8" || !certain && utf8.Valid(data) {
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		if utf8.Valid(data) {
			return data, ""
		}
		n := bytes.Count(bytes.ToValidUTF8(data, []byte{0}), []byte{0}) - bytes.Count(data, []byte{0})
		return bytes.ToValidUTF8(data, []byte("\uFFFD")), fmt.Sprintf("%d invalid UTF-8 sequence(s) replaced by U+FFFD", n)
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil {
		return bytes.ToValidUTF8(data, []byte("\uFFFD")), "the declared encoding " + name + " could not decode the bytes; invalid UTF-8 replaced by U+FFFD"
	}
	how := "declared"
	if !certain {
		how = "declared in the page or assumed"
	}
	out = bytes.TrimPrefix(out, []byte("\uFEFF"))
	return bytes.ToValidUTF8(out, []byte("\uFFFD")), "decoded from " + name + " (" + how + ")"
}

// page holds what Parse reads from the whole page, whichever selection.
type page struct {
	title, lang, baseHref string
	scripts               int
	appRoot               string // the empty application root, if any
	noscriptNotice        bool
}

// appRootIDs are the ids single-page application frameworks render into.
var appRootIDs = map[string]bool{"root": true, "app": true, "__next": true, "__nuxt": true, "___gatsby": true,
	"svelte": true, "app-root": true, "main-app": true, "application": true}

func pageInfo(root *node) *page {
	p := &page{}
	var rec func(n *node, inSVG bool)
	rec = func(n *node, inSVG bool) {
		for _, k := range n.kids {
			if k.isText() {
				continue
			}
			switch k.a {
			case atom.Title:
				if p.title == "" && !inSVG {
					p.title = visibleTextOfRaw(k)
				}
			case atom.Html:
				p.lang, _ = k.attr("lang")
			case atom.Base:
				if p.baseHref == "" {
					p.baseHref, _ = k.attr("href")
				}
			case atom.Script:
				p.scripts++
			case atom.Noscript:
				for _, c := range k.kids {
					if c.isText() && strings.Contains(strings.ToLower(fragmentText(c.text)), "javascript") {
						p.noscriptNotice = true
					}
				}
			}
			if p.appRoot == "" && k.tlen == 0 && !skipped[k.a] {
				id, _ := k.attr("id")
				_, ng := k.attr("ng-version")
				_, ngApp := k.attr("ng-app")
				_, react := k.attr("data-reactroot")
				switch {
				case appRootIDs[strings.ToLower(id)]:
					p.appRoot = "#" + cleanName(id, 32)
				case k.name == "app-root" || ng || ngApp || react:
					p.appRoot = "<" + cleanName(k.name, 32) + ">"
				}
			}
			rec(k, inSVG || k.a == atom.Svg)
		}
	}
	rec(root, false)
	return p
}

// shellReason says why the page's content needs scripts, or "".
func (p *page) shellReason(root *node) string {
	switch {
	case p.scripts > 0 && p.appRoot != "" && root.tlen < shellChars:
		return fmt.Sprintf("the application root %s is empty and the page has %d script(s): its content is rendered by scripts and is not in the HTML", p.appRoot, p.scripts)
	case p.scripts > 0 && root.tlen < shellChars:
		return fmt.Sprintf("the page has only %d characters of text and %d script(s): its content is probably rendered by scripts", root.tlen, p.scripts)
	}
	return ""
}

// visibleTextOfRaw collapses the text of an element whose content the
// tokenizer read as text (title).
func visibleTextOfRaw(n *node) string {
	var b strings.Builder
	for _, k := range n.kids {
		if k.isText() {
			b.WriteString(k.text)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// fragmentText is the text of an HTML fragment held as raw text (noscript
// content), tags dropped. It is linear in len(s) and keeps nothing but text.
func fragmentText(s string) string {
	var b strings.Builder
	z := html.NewTokenizerFragment(strings.NewReader(s), "div")
	for {
		switch z.Next() {
		case html.ErrorToken:
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
			b.WriteByte(' ')
		}
	}
}
