package feed

import (
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"
)

// WriteText writes the feed as plain text for a reader: the feed's title,
// counts, duplicates and warnings, then each returned entry with its
// title, link, dates, authors and its summary (or content) as text. HTML
// summaries are reduced to their text. It stops at the first write error,
// so a bounded writer ends it as soon as the text would not fit.
func (f *Feed) WriteText(w io.Writer) error {
	t := &textWriter{w: w}
	t.line("Feed: ", f.Title, " (", string(f.Format), ")")
	if f.Link != "" {
		t.line("Link: ", f.Link)
	}
	if f.Updated != nil {
		t.line("Updated: ", dateLine(f.Updated))
	}
	t.line("Entries: ", strconv.Itoa(len(f.Entries)), " of ", strconv.Itoa(f.TotalEntries), " returned, ", strconv.Itoa(f.OmittedEntries), " omitted by the entry limit")
	for _, d := range f.Duplicates {
		kind := "duplicates"
		if d.Conflict {
			kind = "conflicting duplicates (differ in " + strings.Join(d.Fields, ", ") + ")"
		}
		t.line("Duplicate: entries ", joinInts(d.Entries), " share the same ", d.By, ": ", kind)
	}
	for _, wn := range f.Warnings {
		where := ""
		if wn.Entry != nil {
			where = " entry " + strconv.Itoa(*wn.Entry)
		}
		t.line("Warning (", wn.Code, where, "): ", wn.Message)
	}
	for _, e := range f.Entries {
		t.line()
		t.line("[", strconv.Itoa(e.Index), "] ", e.Title)
		if e.Link != "" {
			t.line("Link: ", e.Link)
		}
		if e.ID != "" && e.ID != e.Link {
			t.line("ID: ", e.ID)
		}
		if e.Published != nil {
			t.line("Published: ", dateLine(e.Published))
		}
		if e.Updated != nil {
			t.line("Updated: ", dateLine(e.Updated))
		}
		if len(e.Authors) > 0 {
			t.line("By: ", strings.Join(e.Authors, ", "))
		}
		for _, enc := range e.Enclosures {
			t.line("Enclosure: ", enc.URL, " ", enc.Type)
		}
		body, typ := e.Summary, e.SummaryType
		if body == "" {
			body, typ = e.Content, e.ContentType
		}
		if typ == "html" {
			body = htmlText(body)
		}
		if body != "" {
			t.line(body)
		}
	}
	return t.err
}

func dateLine(d *Date) string {
	if d.UTC == nil {
		return d.Original + " (" + d.Problem + ")"
	}
	return d.Original + " (" + d.UTC.Format(time.RFC3339) + ")"
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// htmlText is the text of an HTML fragment: tags dropped, entities
// decoded, scripts and styles left out, whitespace collapsed. It is linear
// in len(s).
func htmlText(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return strings.Join(strings.Fields(s), " ")
	}
	var b strings.Builder
	z := html.NewTokenizerFragment(strings.NewReader(s), "div")
	skip := false
	for {
		switch z.Next() {
		case html.ErrorToken:
			return strings.Join(strings.Fields(b.String()), " ")
		case html.StartTagToken:
			name, _ := z.TagName()
			skip = string(name) == "script" || string(name) == "style"
			b.WriteByte(' ')
		case html.EndTagToken, html.SelfClosingTagToken:
			b.WriteByte(' ')
		case html.TextToken:
			if !skip {
				b.Write(z.Text())
			}
			skip = false
		}
	}
}

// textWriter writes lines and keeps the first error.
type textWriter struct {
	w   io.Writer
	err error
}

func (t *textWriter) line(parts ...string) {
	for _, p := range parts {
		t.write(p)
	}
	t.write("\n")
}

func (t *textWriter) write(s string) {
	if t.err == nil {
		_, t.err = io.WriteString(t.w, s)
	}
}
