package feed

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchRSS is a realistic RSS 2.0 feed of about 1 MiB: 1,000 items with
// title, link, guid, date, author, categories, an escaped-HTML description
// and content:encoded in CDATA.
func benchRSS() []byte {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" +
		`<rss version="2.0" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:content="http://purl.org/rss/1.0/modules/content/" xmlns:atom="http://www.w3.org/2005/Atom"><channel>` +
		`<title>Bench feed</title><link>https://example.org/</link><description>d</description>` +
		`<atom:link href="https://example.org/feed.xml" rel="self" type="application/rss+xml"/>` +
		`<lastBuildDate>Thu, 14 Mar 2024 09:15:00 +0000</lastBuildDate>` + "\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "<item>\n<title>Story number %d about the harbour and the bridge</title>\n<link>https://example.org/2024/03/story-%d</link>\n"+
			"<guid isPermaLink=\"false\">example-%d</guid>\n<pubDate>Thu, 14 Mar 2024 08:%02d:00 GMT</pubDate>\n<dc:creator>Jane Doe</dc:creator>\n"+
			"<category>Local</category><category>Transport</category>\n"+
			"<description>&lt;p&gt;The bridge reopened on &lt;b&gt;Thursday&lt;/b&gt; morning, two years after it closed.&lt;/p&gt;</description>\n"+
			"<content:encoded><![CDATA[<p>The harbour bridge reopened to traffic on Thursday morning, two years after engineers closed it when inspections found corrosion in three of its main cables.</p><p>The first cars crossed shortly after six o'clock, to applause from a small crowd of residents. %s</p>]]></content:encoded>\n</item>\n",
			i, i, i, i%60, strings.Repeat("More text. ", 30))
	}
	b.WriteString("</channel></rss>\n")
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	data := benchRSS()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		f, err := Parse(context.Background(), data, "https://example.org/feed.xml", 1000)
		if err != nil || len(f.Entries) != 1000 {
			b.Fatal(err)
		}
	}
}

type rssDoc struct {
	Channel struct {
		Title string `xml:"title"`
		Items []struct {
			Title       string   `xml:"title"`
			Link        string   `xml:"link"`
			GUID        string   `xml:"guid"`
			PubDate     string   `xml:"pubDate"`
			Creator     string   `xml:"http://purl.org/dc/elements/1.1/ creator"`
			Categories  []string `xml:"category"`
			Description string   `xml:"description"`
			Content     string   `xml:"http://purl.org/rss/1.0/modules/content/ encoded"`
		} `xml:"item"`
	} `xml:"channel"`
}

// BenchmarkBaselineUnmarshal is encoding/xml decoding the same feed into a
// typed struct: no limits, no dates, links or duplicates.
func BenchmarkBaselineUnmarshal(b *testing.B) {
	data := benchRSS()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		var doc rssDoc
		if err := xml.Unmarshal(data, &doc); err != nil || len(doc.Channel.Items) != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkBaselineTokens is the xml.Decoder token stream alone, the floor
// under Parse.
func BenchmarkBaselineTokens(b *testing.B) {
	data := benchRSS()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d := xml.NewDecoder(bytes.NewReader(data))
		for {
			if _, err := d.Token(); err == io.EOF {
				break
			} else if err != nil {
				b.Fatal(err)
			}
		}
	}
}
