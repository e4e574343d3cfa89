package htmldoc

import (
	"io"
	"strconv"
	"strings"
)

// WriteText writes the document as plain text for a reader: the title,
// the article's identity, the warnings, the blocks (headings as "#", list
// items as "-", quotes as ">", pre blocks fenced, table rows between
// "|"), then the numbered links. It stops at the first write error, so a
// bounded writer ends it as soon as the text would not fit.
func (d *Document) WriteText(w io.Writer) error {
	t := &textWriter{w: w}
	if d.Title != "" {
		t.line("Title: ", d.Title)
	}
	if d.Article != nil {
		t.line("Article: ", d.Article.String())
	}
	for _, wn := range d.Warnings {
		t.line("Warning (", wn.Code, "): ", wn.Message)
	}
	if t.n > 0 {
		t.line()
	}
	for i, b := range d.Blocks {
		if i > 0 {
			t.line()
		}
		switch b.Kind {
		case Heading:
			t.line(strings.Repeat("#", max(b.Level, 1)), " ", b.Text)
		case ListItem:
			t.prefixed(strings.Repeat("  ", max(b.Level-1, 0))+"- ", strings.Repeat("  ", max(b.Level, 1)), b.Text)
		case Quote:
			t.prefixed("> ", "> ", b.Text)
		case Pre:
			t.line("```")
			t.line(b.Text)
			t.line("```")
		case TableRow:
			t.line("| ", b.Text, " |")
		default:
			t.line(b.Text)
		}
	}
	if len(d.Links) > 0 {
		t.line()
		t.line("Links:")
		for i, l := range d.Links {
			t.line("[", strconv.Itoa(i+1), "] ", l.Text, " <", l.URL, ">")
		}
	}
	return t.err
}

// textWriter writes lines and keeps the first error.
type textWriter struct {
	w   io.Writer
	n   int
	err error
}

func (t *textWriter) line(parts ...string) {
	for _, p := range parts {
		t.write(p)
	}
	t.write("\n")
}

func (t *textWriter) write(s string) {
	if t.err != nil {
		return
	}
	var n int
	n, t.err = io.WriteString(t.w, s)
	t.n += n
}

// prefixed writes text with first before its first line and rest before
// the others.
func (t *textWriter) prefixed(first, rest, text string) {
	for i, l := range strings.Split(text, "\n") {
		if i == 0 {
			t.line(first, l)
		} else {
			t.line(rest, l)
		}
	}
}
