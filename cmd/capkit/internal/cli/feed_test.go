package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestFeedCommands(t *testing.T) {
	dir := docFiles(t, map[string][]byte{
		"news.xml":   readerFixture(t, "feed", "rss2_news.xml"),
		"atom.xml":   readerFixture(t, "feed", "atom_blog.xml"),
		"laughs.xml": readerFixture(t, "feed", "billion_laughs.xml"),
		"deep.xml":   []byte(strings.Repeat("<x>", 40)),
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	const u = "https://news.example.com/local/feed.xml"
	cases := []cmdCase{
		{"rss", "", []string{"feed", "parse", p("news.xml"), "--url", u, "--limit", "3"}, 0, "Entries: 3 of 7 returned, 4 omitted by the entry limit", ""},
		{"conflict reported", "", []string{"feed", "parse", p("news.xml"), "--url", u}, 0, "conflicting duplicates (differ in title, summary, published)", ""},
		{"json", "", []string{"feed", "parse", "--json", p("atom.xml"), "--url", u}, 0, `"utc": "2024-03-14T08:00:00Z"`, ""},
		{"stdin", string(readerFixture(t, "feed", "rss1_rdf.xml")), []string{"feed", "parse", "-", "--url", u}, 0, "(rss1.0)", ""},
		{"billion laughs", "", []string{"feed", "parse", p("laughs.xml"), "--url", u}, 2, "", "DTDs are refused"},
		{"depth limit", "", []string{"feed", "parse", p("deep.xml"), "--url", u}, 6, "", "depth"},
		{"limit past max", "", []string{"feed", "parse", p("news.xml"), "--url", u, "--limit", "1001"}, 6, "", "entry limit"},
		{"zero limit", "", []string{"feed", "parse", p("news.xml"), "--url", u, "--limit", "0"}, 2, "", ""},
		{"no url", "", []string{"feed", "parse", p("news.xml")}, 0, "Entries: 7 of 7 returned", ""},
		{"relative url", "", []string{"feed", "parse", p("news.xml"), "--url", "/feed"}, 2, "", "source URL"},
	}
	runCases(t, cases)
}
