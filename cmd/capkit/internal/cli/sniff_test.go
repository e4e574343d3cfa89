package cli

import (
	"path/filepath"
	"testing"
)

func TestSniffCommand(t *testing.T) {
	dir := docFiles(t, map[string][]byte{
		"api.json":   readerFixture(t, "sniff", "api.json"),
		"report.pdf": readerFixture(t, "sniff", "report.pdf"),
		"502.html":   readerFixture(t, "sniff", "bad_gateway.html"),
		"login.html": readerFixture(t, "htmldoc", "screen_login.html"),
		"feed.xml":   readerFixture(t, "feed", "atom_blog.xml"),
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []cmdCase{
		{"json", "", []string{"sniff", p("api.json"), "--expect", "json", "--media-type", "application/json"}, 0, "ok: json, as expected for json (declared application/json)", ""},
		{"pdf signature only", "", []string{"sniff", p("report.pdf"), "--expect", "pdf"}, 0, "warning (signature_only)", ""},
		{"feed json", "", []string{"sniff", "--json", p("feed.xml"), "--expect", "feed", "--media-type", "text/html"}, 0, `"code": "media_type_mismatch"`, ""},
		{"stdin", `{"a":1}`, []string{"sniff", "-", "--expect", "json"}, 0, "ok: json", ""},
		{"html where json expected", "", []string{"sniff", p("login.html"), "--expect", "json"}, 9, "", "login wall"},
		{"error page with 200", "", []string{"sniff", p("502.html"), "--expect", "html"}, 9, "", "an error page"},
		{"feed where pdf expected", "", []string{"sniff", p("feed.xml"), "--expect", "pdf"}, 9, "", "the body is a feed"},
		{"empty", "", []string{"sniff", "-", "--expect", "csv"}, 9, "", "empty"},
		{"bad expect", "", []string{"sniff", p("api.json"), "--expect", "yaml"}, 2, "", "json, feed, html, pdf or csv"},
		{"missing expect", "", []string{"sniff", p("api.json")}, 2, "", "expect"},
	}
	runCases(t, cases)
}
