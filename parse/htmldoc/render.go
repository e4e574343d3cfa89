package htmldoc

import (
	"io"
	"strconv"
	"strings"

	"github.com/capkit/capkit/internal/outbuf"
)

// WriteText writes the document as plain text for a reader: the title,
// the article's identity, the warnings, the blocks (headings as "#", list
// items as "-", quotes as ">", pre blocks fenced, table rows between
// "|"), then the numbered links. It stops at the first write error, so a
// bounded writer ends it as soon as the text would not fit.
func (d *Document) WriteText(w io.Writer) error {
	t := outbuf.NewLines(w)
	if d.Title != "" {
		t.Line("Title: ", d.Title)
	}
	if d.Article != nil {
		t.Line("Article: ", d.Article.String())
	}
	for _, wn := range d.Warnings {
		t.Line("Warning (", wn.Code, "): ", wn.Message)
	}
	if t.Written() > 0 {
		t.Line()
	}
	for i, b := range d.Blocks {
		if i > 0 {
			t.Line()
		}
		switch b.Kind {
		case Heading:
			t.Line(strings.Repeat("#", max(b.Level, 1)), " ", b.Text)
		case ListItem:
			prefixed(t, strings.Repeat("  ", max(b.Level-1, 0))+"- ", strings.Repeat("  ", max(b.Level, 1)), b.Text)
		case Quote:
			prefixed(t, "> ", "> ", b.Text)
		case Pre:
			t.Line("```")
			t.Line(b.Text)
			t.Line("```")
		case TableRow:
			t.Line("| ", b.Text, " |")
		default:
			t.Line(b.Text)
		}
	}
	if len(d.Links) > 0 {
		t.Line()
		t.Line("Links:")
		for i, l := range d.Links {
			t.Line("[", strconv.Itoa(i+1), "] ", l.Text, " <", l.URL, ">")
		}
	}
	return t.Err()
}

// prefixed writes text with first before its first line and rest before
// the others.
func prefixed(t *outbuf.Lines, first, rest, text string) {
	for i, l := range strings.Split(text, "\n") {
		if i == 0 {
			t.Line(first, l)
		} else {
			t.Line(rest, l)
		}
	}
}
