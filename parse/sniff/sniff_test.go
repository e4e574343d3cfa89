package sniff

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/parse/htmldoc"
)

func codes(r *Report) []string {
	var c []string
	for _, w := range r.Warnings {
		c = append(c, w.Code)
	}
	return c
}

func gz(data []byte) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write(data)
	w.Close()
	return b.Bytes()
}

func TestCheck(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01")
	cases := []struct {
		name      string
		data      []byte
		expect    Format
		mediaType string
		detected  Kind
		rejected  bool
		screen    htmldoc.ScreenKind
		warnings  []string
	}{
		{name: "json", data: testkit.ReadFile(t, "testdata/api.json"), expect: JSON, mediaType: "application/json; charset=utf-8", detected: KindJSON},
		{name: "json problem+json", data: testkit.ReadFile(t, "testdata/api.json"), expect: JSON, mediaType: "application/problem+json", detected: KindJSON},
		{name: "json scalar", data: []byte(" 42 \n"), expect: JSON, detected: KindJSON},
		{name: "json served as html", data: testkit.ReadFile(t, "testdata/api.json"), expect: JSON, mediaType: "text/html", detected: KindJSON, warnings: []string{WarnMediaTypeMismatch}},
		{name: "json latin-1 charset", data: testkit.ReadFile(t, "testdata/api.json"), expect: JSON, mediaType: "application/json; charset=iso-8859-1", detected: KindJSON, warnings: []string{WarnCharset}},
		{name: "json with bom", data: append([]byte("\xef\xbb\xbf"), testkit.ReadFile(t, "testdata/api.json")...), expect: JSON, detected: KindJSON, warnings: []string{WarnCharset}},
		{name: "json error body", data: testkit.ReadFile(t, "testdata/error.json"), expect: JSON, mediaType: "application/json", detected: KindJSON, warnings: []string{WarnJSONErrorBody}},
		{name: "html where json expected", data: testkit.ReadFile(t, "testdata/bad_gateway.html"), expect: JSON, mediaType: "application/json", detected: KindHTML, rejected: true, screen: htmldoc.ScreenErrorPage},
		{name: "login page where json expected", data: testkit.ReadFile(t, "../htmldoc/testdata/screen_login.html"), expect: JSON, detected: KindHTML, rejected: true, screen: htmldoc.ScreenLogin},
		{name: "plain html where json expected", data: testkit.ReadFile(t, "../htmldoc/testdata/article_news.html"), expect: JSON, detected: KindHTML, rejected: true},
		{name: "text where json expected", data: []byte("not found"), expect: JSON, detected: KindText, rejected: true},
		{name: "rss", data: testkit.ReadFile(t, "../feed/testdata/rss2_news.xml"), expect: Feed, mediaType: "application/rss+xml", detected: KindRSS},
		{name: "rss as text/xml", data: testkit.ReadFile(t, "../feed/testdata/rss2_podcast.xml"), expect: Feed, mediaType: "text/xml; charset=utf-8", detected: KindRSS},
		{name: "rss 0.91 with doctype", data: testkit.ReadFile(t, "../feed/testdata/rss091_netscape.xml"), expect: Feed, detected: KindRSS},
		{name: "rdf", data: testkit.ReadFile(t, "../feed/testdata/rss1_rdf.xml"), expect: Feed, detected: KindRDF},
		{name: "atom", data: testkit.ReadFile(t, "../feed/testdata/atom_blog.xml"), expect: Feed, mediaType: "application/atom+xml", detected: KindAtom},
		{name: "feed as octet-stream", data: testkit.ReadFile(t, "../feed/testdata/atom_blog.xml"), expect: Feed, mediaType: "application/octet-stream", detected: KindAtom, warnings: []string{WarnMediaTypeGeneric}},
		{name: "html where feed expected", data: testkit.ReadFile(t, "../feed/testdata/not_feed.html"), expect: Feed, mediaType: "application/rss+xml", detected: KindHTML, rejected: true},
		{name: "challenge where feed expected", data: testkit.ReadFile(t, "../htmldoc/testdata/screen_challenge.html"), expect: Feed, detected: KindHTML, rejected: true, screen: htmldoc.ScreenChallenge},
		{name: "other xml where feed expected", data: []byte(`<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"/>`), expect: Feed, detected: KindXML, rejected: true},
		{name: "html article", data: testkit.ReadFile(t, "../htmldoc/testdata/article_news.html"), expect: HTML, mediaType: "text/html; charset=utf-8", detected: KindHTML},
		{name: "html error page with status 200", data: testkit.ReadFile(t, "testdata/bad_gateway.html"), expect: HTML, mediaType: "text/html", detected: KindHTML, rejected: true, screen: htmldoc.ScreenErrorPage},
		{name: "consent wall", data: testkit.ReadFile(t, "../htmldoc/testdata/screen_consent.html"), expect: HTML, detected: KindHTML, rejected: true, screen: htmldoc.ScreenConsent},
		{name: "paywall", data: testkit.ReadFile(t, "../htmldoc/testdata/screen_paywall.html"), expect: HTML, detected: KindHTML, rejected: true, screen: htmldoc.ScreenPaywall},
		{name: "app shell", data: testkit.ReadFile(t, "../htmldoc/testdata/app_shell.html"), expect: HTML, detected: KindHTML, warnings: []string{WarnNeedsScripts}},
		{name: "html fragment", data: []byte("<p>Hello <b>there</b></p>"), expect: HTML, detected: KindHTML},
		{name: "xhtml", data: []byte(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body><p>x</p></body></html>`), expect: HTML, detected: KindHTML},
		{name: "text where html expected", data: []byte("Hello"), expect: HTML, detected: KindText, warnings: []string{WarnNoMarkup}},
		{name: "json where html expected", data: testkit.ReadFile(t, "testdata/api.json"), expect: HTML, detected: KindJSON, rejected: true},
		{name: "pdf", data: testkit.ReadFile(t, "testdata/report.pdf"), expect: PDF, mediaType: "application/pdf", detected: KindPDF, warnings: []string{WarnSignatureOnly}},
		{name: "pdf with leading bytes", data: append([]byte("\r\n\r\n"), testkit.ReadFile(t, "testdata/report.pdf")...), expect: PDF, detected: KindPDF, warnings: []string{WarnSignatureOnly, WarnPDFLeadingBytes}},
		{name: "truncated pdf", data: testkit.ReadFile(t, "testdata/report.pdf")[:100], expect: PDF, detected: KindPDF, warnings: []string{WarnPDFNoEOF}},
		{name: "html where pdf expected", data: testkit.ReadFile(t, "testdata/bad_gateway.html"), expect: PDF, detected: KindHTML, rejected: true, screen: htmldoc.ScreenErrorPage},
		{name: "png where pdf expected", data: png, expect: PDF, detected: KindBinary, rejected: true},
		{name: "csv", data: testkit.ReadFile(t, "testdata/data.csv"), expect: CSV, mediaType: "text/csv", detected: KindText},
		{name: "tsv", data: testkit.ReadFile(t, "testdata/data.tsv"), expect: CSV, mediaType: "text/tab-separated-values", detected: KindText},
		{name: "gzip csv", data: gz(testkit.ReadFile(t, "testdata/data.csv")), expect: CSV, detected: KindGzip, warnings: []string{WarnCompressed}},
		{name: "single column", data: []byte("name\nalpha\nbeta\n"), expect: CSV, detected: KindText, warnings: []string{WarnSingleColumn}},
		{name: "html where csv expected", data: testkit.ReadFile(t, "../htmldoc/testdata/screen_captcha.html"), expect: CSV, detected: KindHTML, rejected: true, screen: htmldoc.ScreenChallenge},
		{name: "json where csv expected", data: testkit.ReadFile(t, "testdata/api.json"), expect: CSV, detected: KindJSON, rejected: true},
		{name: "gzip where json expected", data: gz(testkit.ReadFile(t, "testdata/api.json")), expect: JSON, detected: KindGzip, rejected: true},
		{name: "empty", data: nil, expect: JSON, detected: KindEmpty, rejected: true},
		{name: "invalid media type", data: testkit.ReadFile(t, "testdata/api.json"), expect: JSON, mediaType: "application/", detected: KindJSON, warnings: []string{WarnMediaTypeInvalid}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := Check(context.Background(), c.data, c.expect, c.mediaType)
			if c.rejected {
				var re *RejectError
				if !errors.As(err, &re) || re.Detected != c.detected || re.Screen != c.screen || fault.CodeOf(err) != fault.Integrity || !errors.Is(err, ErrRejected) || r != nil {
					t.Fatalf("want rejection of %s (screen %q), got %v %+v", c.detected, c.screen, err, re)
				}
				if c.screen != "" && !errors.Is(err, htmldoc.ErrAccessScreen) {
					t.Fatal("a screen rejection must unwrap to htmldoc.ErrAccessScreen")
				}
				if msg := fault.As(err).Message; !strings.HasPrefix(msg, "expected "+string(c.expect)+", rejected: ") {
					t.Fatalf("the caller sees %q", msg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Detected != c.detected || r.Expected != c.expect {
				t.Fatalf("detected %s", r.Detected)
			}
			for _, w := range c.warnings {
				if !slices.Contains(codes(r), w) {
					t.Errorf("missing warning %s in %+v", w, r.Warnings)
				}
			}
			if len(c.warnings) == 0 && len(r.Warnings) > 0 {
				t.Errorf("unexpected warnings %+v", r.Warnings)
			}
		})
	}
}

func TestFormatAndLimits(t *testing.T) {
	if _, err := Check(context.Background(), []byte("{}"), "yaml", ""); fault.CodeOf(err) != fault.InvalidInput {
		t.Fatalf("unknown format: %v", err)
	}
	// The byte limit at the edge and one past (a PDF: only its ends are read).
	body := make([]byte, limits.SniffMaxBytes+1)
	copy(body, "%PDF-1.4\n")
	copy(body[limits.SniffMaxBytes-6:], "%%EOF\n")
	if r, err := Check(context.Background(), body[:limits.SniffMaxBytes], PDF, ""); err != nil || r.Detected != KindPDF || slices.Contains(codes(r), WarnPDFNoEOF) {
		t.Fatalf("at the limit: %v", err)
	}
	if _, err := Check(context.Background(), body, PDF, ""); fault.CodeOf(err) != fault.Limit {
		t.Fatalf("past the limit: %v", err)
	}
	// HTML past the HTML reader's limit is classified but not screened.
	big := []byte("<!DOCTYPE html><html><body>" + strings.Repeat("<p>x</p>", limits.HTMLMaxBytes/8) + "</body></html>")
	r, err := Check(context.Background(), big, HTML, "")
	if err != nil || !slices.Contains(codes(r), WarnNotChecked) {
		t.Fatalf("big html: %v %+v", err, r)
	}
	// Within the byte limit but past the node limit: not screened either.
	nodes := []byte(strings.Repeat("<br>", limits.HTMLMaxNodes+1))
	r, err = Check(context.Background(), nodes, HTML, "")
	if err != nil || !slices.Contains(codes(r), WarnNotChecked) {
		t.Fatalf("many nodes: %v %+v", err, r)
	}
}
