package htmldoc

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

const fixtureBase = "https://news.example.com/local/2024/03/harbour-bridge-reopens"

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	return testkit.ReadFile(t, "testdata", name)
}

func allText(d *Document) string {
	var b strings.Builder
	for _, bl := range d.Blocks {
		b.WriteString(bl.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

func warningCodes(d *Document) []string {
	var codes []string
	for _, w := range d.Warnings {
		codes = append(codes, w.Code)
	}
	return codes
}

func TestFixtures(t *testing.T) {
	cases := []struct {
		file     string
		sel      Selection
		screen   ScreenKind // expected access screen
		noArt    bool       // expected ArticleError
		title    string
		element  string // ArticleInfo.Element
		method   string
		has      []string // text that must be in the blocks
		hasNot   []string // text that must not be
		warnings []string // warning codes that must be present
		link     string   // a resolved link that must be present
	}{
		{file: "article_news.html", sel: SelectArticle, title: "Harbour bridge reopens after two-year repair | The Coastal Courier",
			element: "article.story", method: "<article>",
			has:    []string{"The harbour bridge reopened to traffic", "We took the time to do this properly", "A separate cycle lane"},
			hasNot: []string{"Related stories", "We use cookies", "Business", "dataLayer", "display: inline"},
			link:   "https://news.example.com/local/2024/2022/05/bridge-closed"},
		{file: "article_news.html", sel: SelectText,
			has:    []string{"Related stories", "We use cookies", "The harbour bridge reopened"},
			hasNot: []string{"dataLayer"}, link: "https://news.example.com/privacy"},
		{file: "article_blog.html", sel: SelectArticle, element: "div#content.post-body.entry-content", method: "paragraph score",
			has:      []string{"net/http/pprof", "encoding/json.Unmarshal | 31% | 9%", "Function | Before | After"},
			hasNot:   []string{"Archives", "2 comments"},
			warnings: []string{WarnTableFlattened},
			// <base href="/blog/"> adjusts the base URL.
			link: "https://news.example.com/blog/2023/11/heap-profiles"},
		{file: "article_itemprop.html", sel: SelectArticle, method: "itemprop=articleBody",
			has: []string{"Die Stadt hat am Montag"}, hasNot: []string{"Stadtrat beschließt Haushalt"}},
		{file: "layout_table.html", sel: SelectArticle, element: "td", method: "paragraph score",
			has: []string{"The lighthouse was built in 1856"}, hasNot: []string{"Home"}},
		{file: "layout_table.html", sel: SelectText, has: []string{"A short history of the lighthouse", "Visit"}},
		{file: "hidden_text.html", sel: SelectArticle, has: []string{"incremental indexing"},
			hasNot: []string{"Ignore all previous", "SYSTEM:", "Secret instruction"}, warnings: []string{WarnHiddenSkipped}},
		{file: "legacy_latin1.html", sel: SelectText, title: "Cafés de la vieille ville",
			has: []string{"Le café du port", "même chocolat"}, warnings: []string{WarnEncoding}},
		{file: "legacy_latin1.html", sel: SelectArticle, noArt: true},
		{file: "index_blog.html", sel: SelectArticle, noArt: true},
		{file: "index_blog.html", sel: SelectText, has: []string{"Reading heap profiles"}, link: "https://news.example.com/2023/12/timeouts"},
		{file: "index_news.html", sel: SelectArticle, noArt: true},
		{file: "app_shell.html", sel: SelectText, warnings: []string{WarnNeedsScripts, WarnNoscriptNotice}},
		{file: "app_shell.html", sel: SelectArticle, noArt: true},
		{file: "screen_login.html", sel: SelectText, screen: ScreenLogin},
		{file: "screen_login.html", sel: SelectArticle, screen: ScreenLogin},
		{file: "screen_consent.html", sel: SelectText, screen: ScreenConsent},
		{file: "screen_consent_cmp.html", sel: SelectArticle, screen: ScreenConsent},
		{file: "screen_challenge.html", sel: SelectText, screen: ScreenChallenge},
		{file: "screen_captcha.html", sel: SelectArticle, screen: ScreenChallenge},
		{file: "screen_paywall.html", sel: SelectArticle, screen: ScreenPaywall},
		{file: "screen_error404.html", sel: SelectText, screen: ScreenErrorPage},
	}
	for _, c := range cases {
		t.Run(c.file+"/"+string(c.sel), func(t *testing.T) {
			doc, err := Parse(context.Background(), fixture(t, c.file), c.sel, &Options{BaseURL: fixtureBase})
			switch {
			case c.screen != "":
				var se *AccessScreenError
				if !errors.As(err, &se) || se.Kind != c.screen || fault.CodeOf(err) != fault.Integrity || !errors.Is(err, ErrAccessScreen) {
					t.Fatalf("want %s screen (integrity), got %v", c.screen, err)
				}
				return
			case c.noArt:
				var ae *ArticleError
				if !errors.As(err, &ae) || fault.CodeOf(err) != fault.InvalidInput || !errors.Is(err, ErrNoArticle) {
					t.Fatalf("want ArticleError, got %v", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			}
			if c.title != "" && doc.Title != c.title {
				t.Errorf("title %q", doc.Title)
			}
			if c.sel == SelectArticle {
				if doc.Article == nil || c.element != "" && doc.Article.Element != c.element || c.method != "" && doc.Article.Method != c.method {
					t.Errorf("article %+v", doc.Article)
				}
				if doc.Article.TextChars < articleMinChars || doc.Article.Paragraphs < 1 || doc.Article.LinkDensity > articleMaxLinkDensity {
					t.Errorf("article measurements %+v", doc.Article)
				}
			}
			text := allText(doc)
			for _, s := range c.has {
				if !strings.Contains(text, s) {
					t.Errorf("missing %q in:\n%s", s, text)
				}
			}
			for _, s := range c.hasNot {
				if strings.Contains(text, s) {
					t.Errorf("unexpected %q", s)
				}
			}
			for _, w := range c.warnings {
				if !slices.Contains(warningCodes(doc), w) {
					t.Errorf("missing warning %s in %v", w, doc.Warnings)
				}
			}
			if c.link != "" && !slices.ContainsFunc(doc.Links, func(l Link) bool { return l.URL == c.link }) {
				t.Errorf("missing link %s in %v", c.link, doc.Links)
			}
		})
	}
}

func TestBlockStructure(t *testing.T) {
	src := `<title> A  &amp; B </title><h2>Head</h2><p>one<br>two</p><ul><li>a<ul><li>b</li></ul></li></ul>` +
		`<blockquote><p>q</p></blockquote><pre>
  x  y
</pre><ol><li>n</li></ol><table><tr><th>h1<th>h2<tr><td>c1<td><a href="/z">c2</a></table>` +
		`<p>a<b>b</b> c</p>`
	doc, err := Parse(context.Background(), []byte(src), SelectText, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []Block{
		{Heading, 2, "Head"}, {Paragraph, 0, "one\ntwo"}, {ListItem, 1, "a"}, {ListItem, 2, "b"},
		{Quote, 0, "q"}, {Pre, 0, "  x  y"}, {ListItem, 1, "n"}, {TableRow, 0, "h1 | h2"}, {TableRow, 0, "c1 | c2"},
		{Paragraph, 0, "ab c"},
	}
	if !slices.Equal(doc.Blocks, want) {
		t.Fatalf("blocks\n got %+v\nwant %+v", doc.Blocks, want)
	}
	if doc.Title != "A & B" {
		t.Errorf("title %q", doc.Title)
	}
	if len(doc.Links) != 1 || doc.Links[0] != (Link{"c2", "/z"}) || !slices.Contains(warningCodes(doc), WarnLinksUnresolved) {
		t.Errorf("links %v warnings %v", doc.Links, doc.Warnings)
	}
}

func TestLinks(t *testing.T) {
	src := `<base href="https://evil.example.net/"><a href="javascript:alert(1)">x</a><a href="data:text/html,hi">d</a>` +
		`<a href="#top">top</a><a href="mailto:a@example.org">mail</a><a href="rel/path?q=1">rel</a><a href="http://[::1">bad</a>`
	cases := []struct {
		name    string
		base    string
		want    []Link
		warning string
	}{
		// <base href> applies only when the caller gives a base URL, and
		// then like a browser: the page may move relative links.
		{"no base", "", []Link{{"mail", "mailto:a@example.org"}, {"rel", "rel/path?q=1"}}, WarnLinksUnresolved},
		{"base", "https://site.example.org/a/b", []Link{{"mail", "mailto:a@example.org"}, {"rel", "https://evil.example.net/rel/path?q=1"}}, WarnLinksSkipped},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Parse(context.Background(), []byte(src), SelectText, &Options{BaseURL: c.base})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(doc.Links, c.want) || !slices.Contains(warningCodes(doc), c.warning) || !slices.Contains(warningCodes(doc), WarnLinksSkipped) {
				t.Fatalf("links %v warnings %v", doc.Links, doc.Warnings)
			}
		})
	}
}

func TestOptionErrors(t *testing.T) {
	cases := []struct {
		name string
		sel  Selection
		base string
	}{
		{"bad selection", "summary", ""},
		{"empty selection", "", ""},
		{"relative base", SelectText, "/a/b"},
		{"ftp base", SelectText, "ftp://example.org/"},
		{"no host", SelectText, "https:///x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(context.Background(), []byte("<p>x"), c.sel, &Options{BaseURL: c.base})
			if fault.CodeOf(err) != fault.InvalidInput {
				t.Fatalf("got %v", err)
			}
		})
	}
}

func TestDisableAccessScreenRefusal(t *testing.T) {
	article := strings.Repeat("<p>The committee met on Tuesday and agreed, after a long debate, to publish its findings in full next month.</p>", 12)
	metered := `<title>Report</title><div class="paywall-content"><article>` + article + `</article><p>Subscribe to continue reading.</p></div>`
	for _, c := range []struct {
		page []byte
		sel  Selection
		has  string
	}{
		{fixture(t, "screen_paywall.html"), SelectText, "On a quiet industrial estate"},
		{[]byte(metered), SelectArticle, "The committee met on Tuesday"},
	} {
		sel := c.sel
		doc, err := Parse(context.Background(), c.page, sel, &Options{DisableAccessScreenRefusal: true})
		if err != nil || !strings.Contains(allText(doc), c.has) {
			t.Fatalf("%s: %v", sel, err)
		}
		i := slices.IndexFunc(doc.Warnings, func(w Warning) bool { return w.Code == WarnAccessScreen })
		if i < 0 || !strings.Contains(doc.Warnings[i].Message, "looks like a paywall (evidence: ") || !strings.Contains(doc.Warnings[i].Message, "the refusal was overridden") {
			t.Fatalf("%s: warnings %+v", sel, doc.Warnings)
		}
	}
	// A page that is no screen gets no warning.
	doc, err := Parse(context.Background(), fixture(t, "article_news.html"), SelectText, &Options{DisableAccessScreenRefusal: true})
	if err != nil || slices.ContainsFunc(doc.Warnings, func(w Warning) bool { return w.Code == WarnAccessScreen }) {
		t.Fatalf("%v %+v", err, doc)
	}
}

func TestLongArticleWithBannerIsNotAScreen(t *testing.T) {
	// A consent manager's markup beside a full article: the article wins.
	article := strings.Repeat("<p>The committee met on Tuesday and agreed, after a long debate, to publish its findings in full next month.</p>", 12)
	src := `<title>Committee report</title><div id="onetrust-banner-sdk"><p>We use cookies. Accept all cookies?</p></div><article>` + article + `</article>`
	if _, err := Parse(context.Background(), []byte(src), SelectArticle, nil); err != nil {
		t.Fatal(err)
	}
	// The same banner alone is a wall.
	src = `<title>Committee report</title><div id="onetrust-banner-sdk"><p>We use cookies. Accept all cookies?</p></div>`
	if _, err := Parse(context.Background(), []byte(src), SelectText, nil); !errors.Is(err, ErrAccessScreen) {
		t.Fatalf("got %v", err)
	}
}

func TestEncodings(t *testing.T) {
	cases := []struct {
		name, contentType string
		data              []byte
		want              string
		warn              bool
	}{
		{"utf-8", "", []byte("<p>caf\xc3\xa9"), "café", false},
		{"utf-8 bom", "", []byte("\xef\xbb\xbf<p>caf\xc3\xa9"), "café", false},
		{"header charset", "text/html; charset=iso-8859-1", []byte("<p>caf\xe9"), "café", true},
		{"invalid utf-8", "", []byte("<meta charset=utf-8><p>caf\xff\xfe"), "caf\uFFFD", true},
		{"utf-16le bom", "", []byte("\xff\xfe<\x00p\x00>\x00h\x00i\x00"), "hi", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Parse(context.Background(), c.data, SelectText, &Options{ContentType: c.contentType})
			if err != nil {
				t.Fatal(err)
			}
			if got := allText(doc); got != c.want+"\n" {
				t.Errorf("text %q", got)
			}
			if slices.Contains(warningCodes(doc), WarnEncoding) != c.warn {
				t.Errorf("warnings %v", doc.Warnings)
			}
		})
	}
}

func TestLimitsAtTheEdge(t *testing.T) {
	attrs := func(n int, dup bool) string {
		var b strings.Builder
		b.WriteString("<p")
		for i := range n {
			if dup {
				b.WriteString(` a="1"`)
			} else {
				b.WriteString(` a` + strconv.Itoa(i) + `="1"`)
			}
		}
		b.WriteString(">x</p>")
		return b.String()
	}
	pad := func(n int) string { return "<p>" + strings.Repeat("a", n-3) }
	cases := []struct {
		name  string
		src   string
		limit bool
	}{
		{"bytes at limit", pad(limits.HTMLMaxBytes), false},
		{"bytes past limit", pad(limits.HTMLMaxBytes + 1), true},
		{"nodes at limit", strings.Repeat("<br>", limits.HTMLMaxNodes), false},
		{"nodes past limit", strings.Repeat("<br>", limits.HTMLMaxNodes+1), true},
		{"depth at limit", strings.Repeat("<div>", limits.HTMLMaxDepth) + "x", false},
		{"depth past limit", strings.Repeat("<div>", limits.HTMLMaxDepth+1) + "x", true},
		{"attributes at limit", attrs(limits.HTMLMaxAttributes, false), false},
		{"attributes past limit", attrs(limits.HTMLMaxAttributes+1, false), true},
		{"duplicate attributes at limit", attrs(limits.HTMLMaxAttributes, true), false},
		{"duplicate attributes past limit", attrs(limits.HTMLMaxAttributes+1, true), true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			doc, err := Parse(context.Background(), []byte(c.src), SelectText, nil)
			if c.limit {
				if fault.CodeOf(err) != fault.Limit || doc != nil {
					t.Fatalf("want limit, got %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
	doc, err := Parse(context.Background(), []byte(strings.Repeat("<br>", limits.HTMLMaxNodes)), SelectText, nil)
	if err != nil || doc.Nodes != limits.HTMLMaxNodes {
		t.Fatalf("nodes %v %v", doc, err)
	}
	doc, err = Parse(context.Background(), []byte(strings.Repeat("<div>", limits.HTMLMaxDepth)), SelectText, nil)
	if err != nil || doc.Depth != limits.HTMLMaxDepth {
		t.Fatalf("depth %v %v", doc, err)
	}
}

func TestAdversarial(t *testing.T) {
	cases := []struct {
		name     string
		src      string
		code     fault.Code
		maxAlloc uint64 // bytes allocated by Parse, at most
	}{
		{"100,000 duplicate attributes", "<p" + strings.Repeat(` a="x"`, 100_000) + ">x", fault.Limit, 64 << 20},
		{"100,000 short duplicate attributes", "<p" + strings.Repeat(" a", 100_000) + ">x", fault.Limit, 64 << 20},
		{"100,000 nested divs", strings.Repeat("<div>", 100_000), fault.Limit, 16 << 20},
		{"100,000 nested spans", strings.Repeat("<span>", 100_000), fault.Limit, 16 << 20},
		{"formatting elements and paragraphs", strings.Repeat("<b>", 127) + strings.Repeat("<p>x", 60_000), fault.Limit, 64 << 20},
		{"a million unclosed paragraphs", strings.Repeat("<p>", 1_000_000), fault.Limit, 32 << 20},
		{"comments", strings.Repeat("<!---->", 60_000), fault.Limit, 16 << 20},
		{"one 4 MiB attribute value", `<a href="` + strings.Repeat("x", limits.HTMLMaxBytes-20) + `">y</a>`, "", 64 << 20},
		{"plaintext swallows the rest", "<plaintext><script>alert(1)</script>", "", 1 << 20},
		{"NUL bytes", "<p>a\x00b</p><\x00>", "", 1 << 20},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error
			n := testkit.Allocated(func() { _, err = Parse(context.Background(), []byte(c.src), SelectText, nil) })
			if fault.CodeOf(err) != c.code {
				t.Fatalf("code %q (%v), want %q", fault.CodeOf(err), err, c.code)
			}
			t.Logf("allocated %d KiB", n>>10)
			if n > c.maxAlloc {
				t.Fatalf("allocated %d bytes, bound %d", n, c.maxAlloc)
			}
		})
	}
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Parse(ctx, []byte(strings.Repeat("<p>x", 5000)), SelectText, nil); fault.CodeOf(err) != fault.Unavailable {
		t.Fatalf("got %v", err)
	}
}

func TestCountRawAttrs(t *testing.T) {
	cases := []struct {
		raw  string
		want int
	}{
		{"<p>", 0},
		{"<p a>", 1},
		{"<p a b=c d='e f' g=\"h i\">", 4},
		{"<p a=b/>", 1},
		{"<p / a / b>", 2},
		{"<p =x>", 1},
		{"<p a = b c>", 2},
		{"<p a='unterminated>", 1},
	}
	for _, c := range cases {
		if got := countRawAttrs([]byte(c.raw)); got != c.want {
			t.Errorf("%s: %d, want %d", c.raw, got, c.want)
		}
	}
}

func TestArticleInsideScreenMarkup(t *testing.T) {
	// The article's own prose settles the screen check only when it lies
	// outside screen markup: here the whole article sits in a paywall
	// container, as metered pages ship it.
	article := strings.Repeat("<p>The committee met on Tuesday and agreed, after a long debate, to publish its findings in full next month.</p>", 12)
	src := `<title>Report</title><div class="paywall-content"><article>` + article + `</article><p>Subscribe to continue reading.</p></div>`
	for _, sel := range []Selection{SelectArticle, SelectText} {
		var se *AccessScreenError
		if _, err := Parse(context.Background(), []byte(src), sel, nil); !errors.As(err, &se) || se.Kind != ScreenPaywall {
			t.Fatalf("%s: %v", sel, err)
		}
	}
}

// TestAccessScreenEvidence: a page is refused as an access screen only on
// real evidence. Short pages whose footer or a link says "Cookie
// settings", "Subscribe now" or "please log in", that carry a consent
// manager's banner beside their own text, or a CAPTCHA on their contact
// form, are documents; walls with the site's header, navigation and
// footer around them, and a paywall after a teaser, are screens.
func TestAccessScreenEvidence(t *testing.T) {
	for _, c := range []struct {
		file   string
		screen ScreenKind
		has    string
	}{
		{"page_short_footer.html", "", "We are open Monday to Saturday"},
		{"page_short_divfooter.html", "", "Tickets £10 at the door."},
		{"page_banner_short.html", "", "The Harbour Board has appointed Amara Osei"},
		{"page_contact_captcha.html", "", "we reply within two working days"},
		{"screen_consent_chrome.html", ScreenConsent, ""},
		{"screen_login_chrome.html", ScreenLogin, ""},
		{"screen_paywall_teaser.html", ScreenPaywall, ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			doc, err := Parse(context.Background(), fixture(t, c.file), SelectText, nil)
			if c.screen != "" {
				var se *AccessScreenError
				if !errors.As(err, &se) || se.Kind != c.screen {
					t.Fatalf("want a %s screen, got %v", c.screen, err)
				}
				return
			}
			if err != nil || !strings.Contains(allText(doc), c.has) {
				t.Fatalf("%v", err)
			}
		})
	}
}

// TestLinkTextIsNoEvidence: a block whose only text is a link saying a
// screen's phrase, outside any footer element, is no evidence.
func TestLinkTextIsNoEvidence(t *testing.T) {
	src := `<title>Spring concert</title><h1>Spring concert</h1><p>Saturday, 7.30pm.</p><div class="foot"><p><a href="/c">Cookie settings</a></p><p><a href="/s">Subscribe now</a></p></div>`
	if _, err := Parse(context.Background(), []byte(src), SelectText, nil); err != nil {
		t.Fatal(err)
	}
}
