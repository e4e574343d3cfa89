package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit"
)

func readerFixture(t *testing.T, pkg, name string) []byte {
	t.Helper()
	return testkit.ReadFile(t, "..", "..", "..", "..", "parse", pkg, "testdata", name)
}

func TestHTMLCommands(t *testing.T) {
	dir := docFiles(t, map[string][]byte{
		"news.html":  readerFixture(t, "htmldoc", "article_news.html"),
		"index.html": readerFixture(t, "htmldoc", "index_blog.html"),
		"login.html": readerFixture(t, "htmldoc", "screen_login.html"),
		"deep.html":  []byte(strings.Repeat("<div>", 129)),
	})
	p := func(name string) string { return filepath.Join(dir, name) }
	cases := []cmdCase{
		{"text", "", []string{"html", "extract", p("news.html")}, 0, "## Related stories", ""},
		{"article", "", []string{"html", "extract", "--article", "--base-url", "https://news.example.com/local/2024/03/x", p("news.html")}, 0,
			"Article: article.story (<article>)", ""},
		{"article json", "", []string{"html", "extract", "--article", "--json", p("news.html")}, 0, `"method": "<article>"`, ""},
		{"stdin", "<title>T</title><p>hello", []string{"html", "extract", "-"}, 0, "Title: T\n\nhello\n", ""},
		{"index page is no article", "", []string{"html", "extract", "--article", p("index.html")}, 2, "", "index or listing page"},
		{"login wall", "", []string{"html", "extract", p("login.html")}, 9, "", "login wall"},
		{"login wall allowed", "", []string{"html", "extract", "--allow-access-screen", p("login.html")}, 0, "Warning (access_screen): the page looks like a login wall", ""},
		{"login wall json", "", []string{"html", "extract", "--json", p("login.html")}, 9, `"code": "integrity"`, ""},
		{"depth limit", "", []string{"html", "extract", p("deep.html")}, 6, "", "depth"},
		{"bad base url", "", []string{"html", "extract", "--base-url", "/x", p("news.html")}, 2, "", "base URL"},
		{"missing file", "", []string{"html", "extract", p("nope.html")}, 3, "", ""},
		{"no file", "", []string{"html", "extract"}, 2, "", ""},
	}
	runCases(t, cases)
}
