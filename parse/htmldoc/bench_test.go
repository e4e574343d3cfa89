package htmldoc

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// benchPage is a realistic article page of about 1 MiB: navigation, a long
// article of paragraphs with inline links and emphasis, lists, a data
// table, inline scripts and styles, and a footer.
func benchPage() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>A long read</title>`)
	b.WriteString(`<style>` + strings.Repeat(".c{margin:0 auto;padding:1em}", 200) + `</style>`)
	b.WriteString(`<script>` + strings.Repeat("window.x=(window.x||0)+1;", 400) + `</script></head><body>`)
	b.WriteString(`<header class="site-header"><nav><ul>`)
	for i := range 40 {
		fmt.Fprintf(&b, `<li><a href="/section/%d">Section %d</a></li>`, i, i)
	}
	b.WriteString(`</ul></nav></header><main><article class="story"><h1>A long read</h1>`)
	for i := 0; b.Len() < 1<<20-4096; i++ {
		if i%10 == 0 {
			fmt.Fprintf(&b, "<h2>Part %d</h2>\n", i/10)
		}
		fmt.Fprintf(&b, `<p class="para">Paragraph %d of the story, with <a href="/related/%d">a link</a>, some <em>emphasis</em> and &amp; entities, goes on for a while, as long-form journalism does, with clauses, asides and figures such as 12.5%% or &pound;3,400.</p>`+"\n", i, i)
		if i%25 == 0 {
			b.WriteString(`<ul><li>First point</li><li>Second point</li><li>Third point</li></ul>`)
			b.WriteString(`<table><tr><th>Year</th><th>Value</th></tr><tr><td>2023</td><td>41</td></tr><tr><td>2024</td><td>57</td></tr></table>`)
		}
	}
	b.WriteString(`</article></main><footer><p>&copy; 2024 Example</p></footer></body></html>`)
	return []byte(b.String())
}

func BenchmarkParseText(b *testing.B)    { benchParse(b, SelectText) }
func BenchmarkParseArticle(b *testing.B) { benchParse(b, SelectArticle) }

func benchParse(b *testing.B, sel Selection) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(context.Background(), page, sel, &Options{BaseURL: "https://example.org/story"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineHTMLParse is golang.org/x/net/html's unbounded tree
// builder on the same page, for the ratio in bench/RESULTS.md.
func BenchmarkBaselineHTMLParse(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := html.Parse(bytes.NewReader(page)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineTokenizer is the tokenizer alone, reading every tag name,
// attribute and text: the floor under any parser built on it.
func BenchmarkBaselineTokenizer(b *testing.B) {
	page := benchPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		z := html.NewTokenizer(bytes.NewReader(page))
		for z.Next() != html.ErrorToken {
			if _, more := z.TagName(); more {
				for more {
					_, _, more = z.TagAttr()
				}
			}
			z.Text()
		}
	}
}
