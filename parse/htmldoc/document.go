package htmldoc

import (
	"fmt"

	"github.com/capkit/capkit/fault"
)

// Selection is what Parse returns of a page: all of its visible text, or
// only its article.
type Selection string

const (
	// SelectText is every visible text block of the page, in order.
	SelectText Selection = "text"
	// SelectArticle is the page's main article, identified and checked to
	// be prose; Parse fails when the page has none.
	SelectArticle Selection = "article"
)

// ParseSelection parses "text" or "article".
func ParseSelection(s string) (Selection, error) {
	switch Selection(s) {
	case SelectText, SelectArticle:
		return Selection(s), nil
	}
	return "", fault.New(fault.InvalidInput, "selection must be %q or %q", SelectText, SelectArticle)
}

// BlockKind is the structure a text block had in the page.
type BlockKind string

const (
	Heading   BlockKind = "heading"   // h1–h6; Level is 1–6
	Paragraph BlockKind = "paragraph" // p, and loose text of other blocks
	ListItem  BlockKind = "list_item" // li, dt, dd; Level is the list nesting depth
	Quote     BlockKind = "quote"     // text inside blockquote
	Pre       BlockKind = "pre"       // pre: whitespace kept as written
	TableRow  BlockKind = "table_row" // one table row, cells joined by " | "
)

// Block is one block of text. Text has HTML whitespace collapsed (except in
// Pre blocks) and line breaks from <br> kept as "\n".
type Block struct {
	Kind  BlockKind `json:"kind"`
	Level int       `json:"level,omitempty"`
	Text  string    `json:"text"`
}

// Link is a hyperlink in the selected content. URL is resolved against the
// base URL when one was given, else it is the href as written.
type Link struct {
	Text string `json:"text"`
	URL  string `json:"url"`
}

// Warning is something the caller should know about the result: content
// that was flattened, skipped, or is not in the HTML at all.
type Warning struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Warning codes.
const (
	// WarnTableFlattened: tables became one TableRow block per row; cell
	// spans, header associations and nested tables are lost.
	WarnTableFlattened = "table_flattened"
	// WarnNeedsScripts: the page's content is rendered by scripts (an
	// empty application root, or almost no text beside scripts), so the
	// HTML does not hold it.
	WarnNeedsScripts = "needs_scripts"
	// WarnNoscriptNotice: a <noscript> element asks for JavaScript.
	WarnNoscriptNotice = "noscript_notice"
	// WarnHiddenSkipped: elements hidden from readers (the hidden
	// attribute, inline display:none or visibility:hidden) were left out;
	// hidden text is a common carrier of injected instructions.
	WarnHiddenSkipped = "hidden_skipped"
	// WarnFramesSkipped: iframes, objects or embeds were present; their
	// content is another document and is not included.
	WarnFramesSkipped = "frames_skipped"
	// WarnLinksUnresolved: relative links were kept as written because no
	// base URL was given.
	WarnLinksUnresolved = "links_unresolved"
	// WarnLinksSkipped: links with a script, data or other non-web scheme,
	// or hrefs that do not parse, were left out.
	WarnLinksSkipped = "links_skipped"
	// WarnEncoding: the bytes were decoded from a legacy encoding, or
	// held invalid UTF-8 that became U+FFFD.
	WarnEncoding = "encoding"
	// WarnAccessScreen: the page looks like an access screen and was
	// returned because the caller overrode the refusal
	// (Options.DisableAccessScreenRefusal).
	WarnAccessScreen = "access_screen"
)

// ArticleInfo identifies the element an article selection returned and the
// measurements that showed it is prose.
type ArticleInfo struct {
	// Element names the element: tag, then #id and .classes as in CSS.
	Element string `json:"element"`
	// Path is the chain of tags from the root to the element.
	Path string `json:"path"`
	// Method says how it was chosen: "itemprop=articleBody", "<article>",
	// "<main>", or "paragraph score".
	Method string `json:"method"`
	// TextChars is the number of characters of text in the element;
	// PageTextChars is the same for the whole page.
	TextChars     int `json:"text_chars"`
	PageTextChars int `json:"page_text_chars"`
	// Paragraphs counts paragraphs of prose (sentence-length text).
	Paragraphs int `json:"paragraphs"`
	// LinkDensity is the share of the element's text inside links.
	LinkDensity float64 `json:"link_density"`
}

func (a *ArticleInfo) String() string {
	return fmt.Sprintf("%s (%s): %d of %d characters, %d paragraphs, link density %.2f",
		a.Element, a.Method, a.TextChars, a.PageTextChars, a.Paragraphs, a.LinkDensity)
}

// Document is what Parse returns.
type Document struct {
	Selection Selection `json:"selection"`
	// Title is the page's <title>, whitespace collapsed.
	Title string `json:"title"`
	// Lang is the root element's lang attribute, as written.
	Lang string `json:"lang,omitempty"`
	// BaseURL is the URL links were resolved against: the caller's base
	// URL, adjusted by a <base href> in the page. Empty when none was
	// given.
	BaseURL string `json:"base_url,omitempty"`
	// Article identifies the article (SelectArticle only).
	Article  *ArticleInfo `json:"article,omitempty"`
	Blocks   []Block      `json:"blocks"`
	Links    []Link       `json:"links"`
	Warnings []Warning    `json:"warnings"`
	// Nodes and Depth are what the parser counted, against
	// limits.HTMLMaxNodes and limits.HTMLMaxDepth.
	Nodes int `json:"nodes"`
	Depth int `json:"depth"`
}
