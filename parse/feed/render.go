package feed

import (
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/capkit/capkit/internal/outbuf"
)

// WriteText writes the feed as plain text for a reader: the feed's title,
// counts, duplicates and warnings, then each returned entry with its
// title, link, dates, authors and its summary (or content) as text. HTML
// summaries are reduced to their text. It stops at the first write error,
// so a bounded writer ends it as soon as the text would not fit.
func (f *Feed) WriteText(w io.Writer) error {
	t := outbuf.NewLines(w)
	t.Line("Feed: ", f.Title, " (", string(f.Format), ")")
	if f.Link != "" {
		t.Line("Link: ", f.Link)
	}
	if f.Updated != nil {
		t.Line("Updated: ", dateLine(f.Updated))
	}
	t.Line("Entries: ", strconv.Itoa(len(f.Entries)), " of ", strconv.Itoa(f.TotalEntries), " returned, ", strconv.Itoa(f.OmittedEntries), " omitted by the entry limit")
	for _, d := range f.Duplicates {
		kind := "duplicates"
		if d.Conflict {
			kind = "conflicting duplicates (differ in " + strings.Join(d.Fields, ", ") + ")"
		}
		t.Line("Duplicate: entries ", joinInts(d.Entries), " share the same ", d.By, ": ", kind)
	}
	for _, wn := range f.Warnings {
		where := ""
		if wn.Entry != nil {
			where = " entry " + strconv.Itoa(*wn.Entry)
		}
		t.Line("Warning (", wn.Code, where, "): ", wn.Message)
	}
	for _, e := range f.Entries {
		t.Line()
		t.Line("[", strconv.Itoa(e.Index), "] ", e.Title)
		if e.Link != "" {
			t.Line("Link: ", e.Link)
		}
		if e.ID != "" && e.ID != e.Link {
			t.Line("ID: ", e.ID)
		}
		if e.Published != nil {
			t.Line("Published: ", dateLine(e.Published))
		}
		if e.Updated != nil {
			t.Line("Updated: ", dateLine(e.Updated))
		}
		if len(e.Authors) > 0 {
			t.Line("By: ", strings.Join(e.Authors, ", "))
		}
		for _, enc := range e.Enclosures {
			t.Line("Enclosure: ", enc.URL, " ", enc.Type)
		}
		body, typ := e.Summary, e.SummaryType
		if body == "" {
			body, typ = e.Content, e.ContentType
		}
		if typ == "html" {
			body = htmlText(body)
		}
		if body != "" {
			t.Line(body)
		}
	}
	return t.Err()
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
