package feed

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

const source = "https://news.example.com/local/feed.xml"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return testkit.ReadFile(t, "testdata", name)
}

func codes(f *Feed) []string {
	var c []string
	for _, w := range f.Warnings {
		c = append(c, w.Code)
	}
	return c
}

func TestFixtures(t *testing.T) {
	type entryWant struct {
		index            int
		id, title, link  string
		publishedUTC     string // RFC 3339, "" when none expected
		publishedProblem string
		summary          string // substring
		authors          []string
		enclosure        string
	}
	cases := []struct {
		file           string
		limit          int
		format         Format
		title, link    string
		total, omitted int
		entries        []entryWant
		dups           []Duplicate
		warnings       []string
		warningsAbsent []string
	}{
		{file: "rss091_netscape.xml", limit: 10, format: RSS091, title: "Café Society Weekly", link: "http://www.example.com/", total: 2,
			entries: []entryWant{
				{index: 0, title: "The espresso machine returns", link: "http://www.example.com/1999/10/espresso.html", summary: "back\u00a0\u2014 and louder"},
				// A relative link is resolved against the source URL.
				{index: 1, link: "https://news.example.com/1999/12/holidays.html"},
			},
			warnings: []string{WarnDTDEntities}, warningsAbsent: []string{WarnNoVersion}},
		{file: "rss2_news.xml", limit: 5, format: RSS20, title: "The Coastal Courier - Local", link: "https://news.example.com/local/", total: 7, omitted: 2,
			entries: []entryWant{
				{index: 0, id: "courier-2024-03-14-0001", publishedUTC: "2024-03-14T08:30:00Z", authors: []string{"Jane Doe"}, summary: "<b>Thursday</b>"},
				// EST is -05:00, not the host's zone.
				{index: 1, link: "https://news.example.com/local/2024/03/school-roof", publishedUTC: "2024-03-13T22:05:00Z"},
				{index: 3, publishedProblem: "not an RFC 822 date"},
			},
			dups: []Duplicate{
				{By: "id", Key: "courier-2024-03-14-0001", Entries: []int{0, 4}},
				{By: "id", Key: "courier-2024-03-12-0007", Entries: []int{2, 5}, Conflict: true, Fields: []string{"title", "summary", "published"}},
			},
			// Entry 6 is omitted by the limit and still checked.
			warnings: []string{WarnWeekday, WarnDate, WarnLink}},
		{file: "rss2_podcast.xml", limit: 1, format: RSS20, total: 2, omitted: 1,
			entries:  []entryWant{{index: 0, id: "fieldnotes-042", publishedUTC: "2024-03-01T14:00:00Z", enclosure: "https://cdn.example.org/episodes/042.mp3"}},
			warnings: []string{WarnLength}},
		{file: "rss1_rdf.xml", limit: 3, format: RSS10, title: "Journal of Small Observations", total: 3,
			entries: []entryWant{
				{index: 0, id: "https://journal.example.net/2024/03/10/swifts", publishedUTC: "2024-03-10T10:30:00Z", authors: []string{"K. Tanaka"}},
				{index: 1, publishedProblem: "a date without a time of day or time zone"},
				{index: 2, summary: "", publishedUTC: "2024-02-28T06:12:00Z"},
			},
			warnings: []string{WarnDate}},
		{file: "atom_blog.xml", limit: 3, format: Atom10, title: "Field Notes", link: "https://blog.example.org/", total: 3,
			entries: []entryWant{
				{index: 0, title: "Profiling Go services in production", link: "https://blog.example.org/2024/03/profiling-go",
					publishedUTC: "2024-03-14T08:00:00Z", authors: []string{"A. Writer"}},
				// An entry's xml:base overrides the feed's.
				{index: 1, link: "https://blog.example.org/2024/02/sqlite-backups", enclosure: "https://blog.example.org/2024/02/sqlite-backups.pdf",
					summary: "The &lt;code&gt;backup&lt;/code&gt;"[:0] + "<code>backup</code>"},
			}},
		{file: "rss2_latin1.xml", limit: 1, format: RSS20, title: "Les cafés", total: 1,
			entries: []entryWant{{index: 0, title: "Réouverture du café du port", publishedUTC: "2024-03-02T08:00:00Z"}}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := Parse(context.Background(), fixture(t, c.file), source, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != c.format || c.title != "" && f.Title != c.title || c.link != "" && f.Link != c.link {
				t.Errorf("feed %s %q %q", f.Format, f.Title, f.Link)
			}
			if f.TotalEntries != c.total || f.OmittedEntries != c.omitted || len(f.Entries) != c.total-c.omitted {
				t.Errorf("counts total %d omitted %d returned %d", f.TotalEntries, f.OmittedEntries, len(f.Entries))
			}
			for _, w := range c.entries {
				e := f.Entries[w.index]
				if e.Index != w.index || w.id != "" && e.ID != w.id || w.title != "" && e.Title != w.title || w.link != "" && e.Link != w.link {
					t.Errorf("entry %d: %+v", w.index, e)
				}
				if w.publishedUTC != "" && (e.Published == nil || e.Published.UTC == nil || e.Published.UTC.Format(time.RFC3339) != w.publishedUTC) {
					t.Errorf("entry %d published %+v", w.index, e.Published)
				}
				if w.publishedProblem != "" && (e.Published == nil || e.Published.Problem != w.publishedProblem || e.Published.Time != nil || e.Published.Original == "") {
					t.Errorf("entry %d published %+v", w.index, e.Published)
				}
				if !strings.Contains(e.Summary+e.Content, w.summary) {
					t.Errorf("entry %d summary %q", w.index, e.Summary)
				}
				if w.authors != nil && !slices.Equal(e.Authors, w.authors) {
					t.Errorf("entry %d authors %q", w.index, e.Authors)
				}
				if w.enclosure != "" && (len(e.Enclosures) == 0 || e.Enclosures[0].URL != w.enclosure) {
					t.Errorf("entry %d enclosures %+v", w.index, e.Enclosures)
				}
			}
			if c.dups != nil && fmt.Sprint(f.Duplicates) != fmt.Sprint(c.dups) {
				t.Errorf("duplicates\n got %+v\nwant %+v", f.Duplicates, c.dups)
			}
			for _, w := range c.warnings {
				if !slices.Contains(codes(f), w) {
					t.Errorf("missing warning %s in %+v", w, f.Warnings)
				}
			}
			for _, w := range c.warningsAbsent {
				if slices.Contains(codes(f), w) {
					t.Errorf("unexpected warning %s", w)
				}
			}
		})
	}
}

func TestDatesKeepThreeFields(t *testing.T) {
	f, err := Parse(context.Background(), fixture(t, "atom_blog.xml"), source, 1)
	if err != nil {
		t.Fatal(err)
	}
	d := f.Entries[0].Published
	if d.Original != "2024-03-14T09:00:00+01:00" || d.Time.Format(time.RFC3339) != "2024-03-14T09:00:00+01:00" ||
		d.UTC.Format(time.RFC3339) != "2024-03-14T08:00:00Z" || d.UTC.Location() != time.UTC {
		t.Fatalf("%+v", d)
	}
	if _, off := d.Time.Zone(); off != 3600 {
		t.Fatalf("offset %d", off)
	}
}

func TestRefused(t *testing.T) {
	cases := []struct {
		name string
		data string
		code fault.Code
		msg  string
	}{
		{"billion laughs", string(fixture(t, "billion_laughs.xml")), fault.InvalidInput, "DTDs are refused"},
		{"external entity", string(fixture(t, "xxe.xml")), fault.InvalidInput, "DTDs are refused"},
		{"parameter entity outside doctype", `<!ENTITY % x "y"><rss/>`, fault.InvalidInput, "markup declarations"},
		{"html", string(fixture(t, "not_feed.html")), fault.InvalidInput, "HTML"},
		{"html without doctype", `<html><body>x</body></html>`, fault.InvalidInput, "HTML"},
		{"other xml", `<svg xmlns="http://www.w3.org/2000/svg"/>`, fault.InvalidInput, "not a feed"},
		{"empty", ``, fault.InvalidInput, "no root"},
		{"two roots", `<rss version="2.0"><channel/></rss><rss/>`, fault.InvalidInput, "more than one root"},
		{"duplicate attribute", `<rss version="2.0" version="0.91"><channel/></rss>`, fault.InvalidInput, "repeats an attribute"},
		{"invalid utf-8", "<rss><channel><title>\xff</title></channel></rss>", fault.InvalidInput, "not well-formed"},
		{"truncated", `<rss version="2.0"><channel><title>x`, fault.InvalidInput, "not well-formed"},
		{"unknown charset", `<?xml version="1.0" encoding="x-nonsense"?><rss/>`, fault.InvalidInput, "not well-formed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(context.Background(), []byte(c.data), source, 10)
			if fault.CodeOf(err) != c.code || f != nil || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// TestRecovered: malformed feeds as real sites serve them are read, as a
// lenient feed reader would, and every repair is a warning saying what and
// where. These were refused before.
func TestRecovered(t *testing.T) {
	cases := []struct {
		name    string
		data    string
		format  Format
		title   string
		entries int
		warn    []string // each must appear in one warning, in order
	}{
		{"bare ampersand", `<rss version="2.0"><channel><title>Tom & Jerry</title><item><title>a</title><link>https://e.org/a?x=1&y=2</link></item></channel></rss>`,
			RSS20, "Tom & Jerry", 1, []string{`line 1, column 40: a bare "&" is not escaped`, `line 1, column 102: a bare "&"`}},
		{"html entity without dtd", `<rss version="2.0"><channel><title>&copy; 2024&nbsp;x</title></channel></rss>`,
			RSS20, "© 2024 x", 0, []string{"the HTML entity &copy; is not defined by XML", "&nbsp;"}},
		{"unknown entity", `<rss version="2.0"><channel><title>&bogus; x</title></channel></rss>`,
			RSS20, "&bogus; x", 0, []string{"the entity &bogus; is not defined: kept as text"}},
		{"mismatched closing tag", "<rss version=\"2.0\"><channel><title>t</title><item><title>a</item></channel></rss>",
			RSS20, "t", 1, []string{"the end tag </item> does not match the open <title>"}},
		{"empty channel", `<rss version="2.0"><channel></channel></rss>`, RSS20, "", 0, nil},
		{"missing channel", `<rss version="2.0"></rss>`, RSS20, "", 0, []string{"no <channel>"}},
		{"atom 0.3", `<feed xmlns="http://purl.org/atom/ns#" version="0.3"><title>Old</title><tagline>sub</tagline><modified>2004-01-02T03:04:05Z</modified>
<entry><title>e</title><id>tag:e,2004:1</id><link rel="alternate" type="text/html" href="https://e.org/1"/><issued>2004-01-01T00:00:00Z</issued></entry></feed>`,
			Atom03, "Old", 1, []string{"Atom 0.3"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(context.Background(), []byte(c.data), source, 10)
			if err != nil {
				t.Fatal(err)
			}
			if f.Format != c.format || f.Title != c.title || f.TotalEntries != c.entries {
				t.Fatalf("format %s title %q entries %d", f.Format, f.Title, f.TotalEntries)
			}
			var msgs []string
			for _, w := range f.Warnings {
				msgs = append(msgs, w.Message)
			}
			all := strings.Join(msgs, "\n")
			rest := all
			for _, w := range c.warn {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("warning %q missing in:\n%s", w, all)
				}
				rest = rest[i+len(w):]
			}
		})
	}
	f, err := Parse(context.Background(), []byte(cases[len(cases)-1].data), source, 10)
	if err != nil || f.Description != "sub" || f.Updated == nil || f.Entries[0].Published == nil || f.Entries[0].Link != "https://e.org/1" {
		t.Fatalf("atom 0.3 fields: %+v %v", f, err)
	}
}

// TestRepairWarningsBounded: a feed with a repair on every line lists
// limits.FeedMaxRepairWarnings of them and counts the rest.
func TestRepairWarningsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss version="2.0"><channel><title>t</title>`)
	for range limits.FeedMaxRepairWarnings + 50 {
		b.WriteString("<item><title>a & b</title></item>\n")
	}
	b.WriteString("</channel></rss>")
	f, err := Parse(context.Background(), []byte(b.String()), source, 10)
	if err != nil {
		t.Fatal(err)
	}
	var repaired []string
	for _, w := range f.Warnings {
		if w.Code == WarnRepaired {
			repaired = append(repaired, w.Message)
		}
	}
	if len(repaired) != limits.FeedMaxRepairWarnings+1 || !strings.Contains(repaired[len(repaired)-1], "50 more repairs") {
		t.Fatalf("%d repair warnings, last %q", len(repaired), repaired[len(repaired)-1])
	}
}

func TestArguments(t *testing.T) {
	data := fixture(t, "rss2_podcast.xml")
	cases := []struct {
		name  string
		url   string
		limit int
		code  fault.Code
	}{
		{"ok", source, 1, ""},
		{"limit at max", source, limits.FeedMaxEntries, ""},
		{"limit past max", source, limits.FeedMaxEntries + 1, fault.Limit},
		{"zero limit", source, 0, fault.InvalidInput},
		{"negative limit", source, -1, fault.InvalidInput},
		{"relative url", "/feed.xml", 1, fault.InvalidInput},
		{"file url", "file:///etc/feed.xml", 1, fault.InvalidInput},
		{"no url", "", 1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(context.Background(), data, c.url, c.limit)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("got %v", err)
			}
		})
	}
}

// rssWith returns an RSS 2.0 feed of n items, each one element with text.
func rssWith(n int) string {
	var b strings.Builder
	b.WriteString(`<rss version="2.0"><channel>`)
	for i := range n {
		fmt.Fprintf(&b, `<item><guid>%d</guid></item>`, i)
	}
	b.WriteString(`</channel></rss>`)
	return b.String()
}

func TestLimitsAtTheEdge(t *testing.T) {
	nest := func(depth int) string {
		// rss > channel > item > (depth-3) nested elements.
		return `<rss version="2.0"><channel><item>` + strings.Repeat("<x>", depth-3) + strings.Repeat("</x>", depth-3) + `</item></channel></rss>`
	}
	attrs := func(n int) string {
		var b strings.Builder
		b.WriteString(`<rss`)
		for i := range n {
			fmt.Fprintf(&b, ` a%d="1"`, i)
		}
		b.WriteString(`><channel/></rss>`)
		return b.String()
	}
	pad := func(n int) string {
		s := `<rss version="2.0"><channel><title>`
		e := `</title></channel></rss>`
		return s + strings.Repeat("a", n-len(s)-len(e)) + e
	}
	// rss + channel + 2 per item: (12,000 - 2) / 2 items fill the node budget.
	itemsAtLimit := (limits.FeedMaxNodes - 2) / 2
	cases := []struct {
		name  string
		data  string
		limit bool
	}{
		{"bytes at limit", pad(limits.FeedMaxBytes), false},
		{"bytes past limit", pad(limits.FeedMaxBytes + 1), true},
		{"nodes at limit", rssWith(itemsAtLimit), false},
		{"nodes past limit", rssWith(itemsAtLimit) + "<!---->", true},
		{"depth at limit", nest(limits.FeedMaxDepth), false},
		{"depth past limit", nest(limits.FeedMaxDepth + 1), true},
		{"attributes at limit", attrs(limits.FeedMaxAttributes), false},
		{"attributes past limit", attrs(limits.FeedMaxAttributes + 1), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(context.Background(), []byte(c.data), source, limits.FeedMaxEntries)
			if c.limit {
				if fault.CodeOf(err) != fault.Limit || f != nil {
					t.Fatalf("want limit, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	f, err := Parse(context.Background(), []byte(rssWith(itemsAtLimit)), source, 10)
	if err != nil || f.Nodes != limits.FeedMaxNodes || f.TotalEntries != itemsAtLimit || f.OmittedEntries != itemsAtLimit-10 {
		t.Fatalf("%v nodes %d", err, f.Nodes)
	}
	f, err = Parse(context.Background(), []byte(nest(limits.FeedMaxDepth)), source, 1)
	if err != nil || f.Depth != limits.FeedMaxDepth {
		t.Fatalf("%v depth %d", err, f.Depth)
	}
}

func TestEntryLimitEdge(t *testing.T) {
	data := []byte(rssWith(limits.FeedMaxEntries + 1))
	cases := []struct {
		limit, returned, omitted int
	}{
		{limits.FeedMaxEntries, limits.FeedMaxEntries, 1},
		{limits.FeedMaxEntries - 1, limits.FeedMaxEntries - 1, 2},
		{1, 1, limits.FeedMaxEntries},
	}
	for _, c := range cases {
		f, err := Parse(context.Background(), data, source, c.limit)
		if err != nil || len(f.Entries) != c.returned || f.OmittedEntries != c.omitted || f.TotalEntries != limits.FeedMaxEntries+1 {
			t.Fatalf("limit %d: %v %d %d", c.limit, err, len(f.Entries), f.OmittedEntries)
		}
		if last := f.Entries[len(f.Entries)-1]; last.Index != c.returned-1 {
			t.Fatalf("entries are not the first ones: %d", last.Index)
		}
	}
}

func TestAdversarial(t *testing.T) {
	// A billion-laughs DOCTYPE padded to the byte limit with entity
	// declarations: refused at the DOCTYPE, in one pass over the bytes.
	var laughs strings.Builder
	laughs.WriteString(`<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY lol "lol">`)
	for i := 1; laughs.Len() < limits.FeedMaxBytes-200; i++ {
		fmt.Fprintf(&laughs, `<!ENTITY lol%d "&lol%d;&lol%d;&lol%d;&lol%d;">`, i, i-1, i-1, i-1, i-1)
	}
	laughs.WriteString(`]><rss version="2.0"><channel><title>&lol30;</title></channel></rss>`)
	var manyAttrs strings.Builder
	manyAttrs.WriteString("<rss")
	for i := 0; manyAttrs.Len() < limits.FeedMaxBytes-100; i++ {
		fmt.Fprintf(&manyAttrs, ` a%d="1"`, i)
	}
	manyAttrs.WriteString("/>")
	cases := []struct {
		name     string
		data     string
		code     fault.Code
		maxAlloc uint64
	}{
		{"billion laughs fixture", string(fixture(t, "billion_laughs.xml")), fault.InvalidInput, 1 << 20},
		{"billion laughs at the byte limit", laughs.String(), fault.InvalidInput, 16 << 20},
		{"100,000 nested elements", strings.Repeat("<x>", 100_000), fault.Limit, 1 << 20},
		{"distinct attributes up to the byte limit", manyAttrs.String(), fault.Limit, 128 << 20},
		{"100,000 duplicate attributes", "<rss" + strings.Repeat(` a="1"`, 100_000) + "/>", fault.Limit, 96 << 20},
		{"comments", "<rss>" + strings.Repeat("<!---->", 100_000) + "</rss>", fault.Limit, 4 << 20},
		{"CDATA chunks", `<rss version="2.0"><channel><title>` + strings.Repeat("<![CDATA[x]]>", 150_000) + `</title></channel></rss>`, "", 32 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := testkit.Allocated(func() { _, err = Parse(context.Background(), []byte(c.data), source, 10) })
			t.Logf("allocated %d KiB", n>>10)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q (%v), want %q", fault.CodeOf(err), err, c.code)
			}
			if n > c.maxAlloc {
				t.Fatalf("allocated %d bytes, bound %d", n, c.maxAlloc)
			}
		})
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Parse(ctx, fixture(t, "rss2_news.xml"), source, 10)
	if fault.CodeOf(err) != fault.Unavailable || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
}

// TestDoctypes: the RSS 0.91 DOCTYPE is accepted in its PUBLIC and its
// SYSTEM form, never read (its HTML entities are known without it); any
// other DOCTYPE, or one with an internal subset, is refused.
func TestDoctypes(t *testing.T) {
	const body = `<rss version="0.91"><channel><title>Caf&eacute;</title><item><title>a</title></item></channel></rss>`
	cases := []struct {
		name, doctype string
		ok            bool
	}{
		{"public", `<!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">`, true},
		{"public in single quotes", `<!DOCTYPE rss PUBLIC '-//Netscape Communications//DTD RSS 0.91//EN' 'http://my.netscape.com/publish/formats/rss-0.91.dtd'>`, true},
		{"system", `<!DOCTYPE rss SYSTEM "http://my.netscape.com/publish/formats/rss-0.91.dtd">`, true},
		{"system in single quotes", `<!DOCTYPE rss SYSTEM 'http://my.netscape.com/publish/formats/rss-0.91.dtd'>`, true},
		{"system over https, spread over lines", "<!DOCTYPE rss\n  SYSTEM\n  \"https://my.netscape.com/publish/formats/rss-0.91.dtd\" >", true},
		{"system of another DTD", `<!DOCTYPE rss SYSTEM "http://evil.example/rss-0.91.dtd">`, false},
		{"system with an internal subset", `<!DOCTYPE rss SYSTEM "http://my.netscape.com/publish/formats/rss-0.91.dtd" [<!ENTITY x "y">]>`, false},
		{"public of another DTD", `<!DOCTYPE rss PUBLIC "-//Example//DTD RSS//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">`, false},
		{"the public identifier as a system literal", `<!DOCTYPE rss SYSTEM "-//Netscape Communications//DTD RSS 0.91//EN">`, false},
		{"no identifier", `<!DOCTYPE rss>`, false},
		{"another root name", `<!DOCTYPE feed SYSTEM "http://my.netscape.com/publish/formats/rss-0.91.dtd">`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := Parse(context.Background(), []byte(c.doctype+"\n"+body), source, 10)
			if !c.ok {
				if fault.CodeOf(err) != fault.InvalidInput || !strings.Contains(err.Error(), "DTDs are refused") {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil || f.Format != RSS091 || f.Title != "Café" || !slices.Contains(codes(f), WarnDTDEntities) {
				t.Fatalf("got %+v %v", f, err)
			}
		})
	}
}

// TestNoSourceURL: without a source URL, absolute links are kept, links
// an absolute xml:base resolves are resolved, and other relative links
// are left out with a warning saying a base URL would resolve them.
func TestNoSourceURL(t *testing.T) {
	const data = `<feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>
<entry><id>1</id><link href="https://example.org/a"/></entry>
<entry><id>2</id><link href="/b"/></entry>
<entry xml:base="https://example.net/x/"><id>3</id><link href="c"/></entry>
<entry xml:base="d/"><id>4</id><link href="e"/></entry>
</feed>`
	f, err := Parse(context.Background(), []byte(data), "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var links []string
	for _, e := range f.Entries {
		links = append(links, e.Link)
	}
	if !slices.Equal(links, []string{"https://example.org/a", "", "https://example.net/x/c", ""}) || f.SourceURL != "" {
		t.Fatalf("links %q, source %q", links, f.SourceURL)
	}
	relative := 0
	for _, w := range f.Warnings {
		if w.Code == WarnLink && strings.Contains(w.Message, "relative and no base URL was given") {
			relative++
		}
	}
	if relative != 2 {
		t.Fatalf("warnings %+v", f.Warnings)
	}
	for _, bad := range []string{"/feed.xml", "ftp://example.org/", "https:///x"} {
		if _, err := Parse(context.Background(), []byte(data), bad, 10); fault.CodeOf(err) != fault.InvalidInput {
			t.Fatalf("source %q: %v", bad, err)
		}
	}
}
