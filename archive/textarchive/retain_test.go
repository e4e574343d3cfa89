package textarchive

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/budget"
)

// site is an HTTPS server for docs.test on loopback, reached through a
// scripted DNS server, counting the GETs it answers.
type site struct {
	ca   *nettest.CA
	port int
	dns  *nettest.DNS
	gets atomic.Int64
	mux  *http.ServeMux
}

func newSite(t *testing.T) *site {
	t.Helper()
	s := &site{ca: nettest.NewCA(t), mux: http.NewServeMux()}
	s.port = s.ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.gets.Add(1)
		s.mux.ServeHTTP(w, r)
	}), "docs.test")
	s.dns = nettest.StartDNS(t, map[string][]string{"docs.test": {"127.0.0.1"}})
	s.page("/page.html", "text/html; charset=utf-8", `<html><head><title>The page</title></head><body><h1>Heading</h1><p>The heliotrope budget was approved on Tuesday by the committee.</p></body></html>`)
	s.page("/doc.pdf", "application/pdf", "%PDF-1.7 binary\x00\x01")
	s.page("/notes.txt", "text/plain", "plain notes, kept as they are\r\nsecond line")
	return s
}

func (s *site) page(path, contentType, body string) {
	s.mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		fmt.Fprint(w, body)
	})
}

func (s *site) url(path string) string { return "https://docs.test:" + strconv.Itoa(s.port) + path }

// policy writes a source policy for the site (extra: more JSON members)
// and loads it.
func (s *site) policy(t *testing.T, retention, extra string) (*SourcePolicy, string) {
	t.Helper()
	dir := t.TempDir()
	s.ca.WritePEM(t, dir, "ca.pem")
	body := fmt.Sprintf(`{"format": 1, "group": "docs", "hosts": ["docs.test"], "retention": %q, "ports": [%d], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"%s}`, retention, s.port, extra)
	path := filepath.Join(dir, "source.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := LoadSourcePolicy(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return p, path
}

// source is the site's source with a budget root of its own.
func (s *site) source(t *testing.T, retention, extra string) *Source {
	t.Helper()
	p, _ := s.policy(t, retention, extra)
	b, err := budget.Open(context.Background(), t.TempDir(), p.Budget(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return &Source{Policy: p, Budget: b, Resolver: s.dns.Resolver()}
}

func fetchOK(t *testing.T, a *Archive, src *Source, url, request string) *Fetched {
	t.Helper()
	out, err := a.Fetch(context.Background(), src, FetchRequest{URL: url, Request: request, Task: "test"})
	if err != nil {
		t.Fatalf("fetch %s: %v", url, err)
	}
	return out
}

func TestFetchRetainsText(t *testing.T) {
	s := newSite(t)
	a := newArchive(t)
	src := s.source(t, RetainTextOnly, "")
	out := fetchOK(t, a, src, s.url("/page.html"), "op-1")
	if out.Kind != KindFetch || out.Collection != "docs" || out.Item != s.url("/page.html") || out.Title != "The page" || out.Parts != 1 || out.BlobSHA256 != "" || out.Repeat != "" || out.Attempts != 1 {
		t.Fatalf("a retained page: %+v", out)
	}
	if out.Receipt == nil || out.Receipt.Status != 200 || out.SourceURL != s.url("/page.html") {
		t.Fatalf("receipt %+v", out.Receipt)
	}
	c := cite(t, a, out.Version, 0, 0, 20)
	if !strings.Contains(c.Citation.Quote.Exact+c.Citation.Quote.Suffix, "The page") || c.Citation.Method != methodHTML || c.NextStart != 20 {
		t.Fatalf("the text, paged from the archive: %+v", c)
	}
	// Windows of the retained text are read from the archive.
	for start := c.NextStart; start > 0; {
		n := min(int64(20), c.Citation.PartChars-start)
		start = cite(t, a, out.Version, 0, start, n).NextStart
	}
	again := fetchOK(t, a, src, s.url("/page.html"), "op-1")
	if !again.Repeated || again.Version != out.Version || again.Receipt.SHA256 != out.Receipt.SHA256 || again.Repeat != "" {
		t.Fatalf("the operation repeated: %+v", again)
	}
	if n := s.gets.Load(); n != 1 {
		t.Fatalf("%d GETs for one operation and its repeat and its windows", n)
	}
	_, err := a.Fetch(context.Background(), src, FetchRequest{URL: s.url("/notes.txt"), Request: "op-1", Task: "test"})
	wantCode(t, err, fault.Conflict)
	plain := fetchOK(t, a, src, s.url("/notes.txt"), "op-2")
	if got := cite(t, a, plain.Version, 0, 0, plain.Chars).Citation.Quote.Exact; got != "plain notes, kept as they are\r\nsecond line" {
		t.Fatalf("a text body: %q", got)
	}
	hits := must(a.Search(context.Background(), SearchQuery{Text: "heliotrope", Collection: "docs"}))
	if len(hits.Hits) != 1 || hits.Hits[0].Version != out.Version {
		t.Fatalf("search of the retained page: %+v", hits.Hits)
	}
	auditClean(t, a.dir)
}

func TestFetchOriginal(t *testing.T) {
	s := newSite(t)
	a := newArchive(t)
	src := s.source(t, RetainOriginal, "")
	page := fetchOK(t, a, src, s.url("/page.html"), "op-1")
	if page.BlobSHA256 != page.Receipt.SHA256 || page.Parts != 1 || page.Retention != RetainOriginal {
		t.Fatalf("a page kept whole: %+v", page)
	}
	pdf := fetchOK(t, a, src, s.url("/doc.pdf"), "op-2")
	if pdf.BlobSHA256 == "" || pdf.Parts != 0 || !strings.Contains(pdf.TextNote, "application/pdf") || pdf.MediaType != "application/pdf" {
		t.Fatalf("a PDF kept whole, without text: %+v", pdf)
	}
	textOnly := s.source(t, RetainTextOnly, "")
	_, err := a.Fetch(context.Background(), textOnly, FetchRequest{URL: s.url("/doc.pdf"), Request: "op-3", Task: "test"})
	wantCode(t, err, fault.InvalidInput)
	// The failed operation's GET reached the server: a repeat says so.
	again, err := a.Fetch(context.Background(), textOnly, FetchRequest{URL: s.url("/doc.pdf"), Request: "op-3", Task: "test"})
	if err == nil || again != nil {
		t.Fatalf("the repeat of a failed operation on the same body: %+v %v", again, err)
	}
	var attempts int
	a.read(context.Background(), "test", func(tx *txn) error {
		return tx.row(`SELECT attempts FROM fetches WHERE request = 'op-3' AND uncertain = 1`).Scan(&attempts)
	})
	if attempts != 2 {
		t.Fatalf("the failed operation's attempts: %d (uncertain)", attempts)
	}
	auditClean(t, a.dir)
}

func TestFetchRepeatDisclosed(t *testing.T) {
	s := newSite(t)
	a := newArchive(t)
	src := s.source(t, RetainTextOnly, "")
	ctx := context.Background()
	slow := make(chan struct{})
	s.mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		<-slow
		fmt.Fprint(w, "late")
	})
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	_, err := a.Fetch(short, src, FetchRequest{URL: s.url("/slow"), Request: "op", Task: "test"})
	close(slow)
	if err == nil {
		t.Fatal("the slow fetch did not fail")
	}
	out := fetchOK(t, a, src, s.url("/slow"), "op")
	if out.Attempts != 2 || !strings.Contains(out.Repeat, "may have reached the server") {
		t.Fatalf("the repeat of an operation whose GET was sent: %+v", out)
	}
	if again := fetchOK(t, a, src, s.url("/slow"), "op"); !again.Repeated || again.Repeat == "" {
		t.Fatalf("the retained result keeps its disclosure: %+v", again)
	}
}

func TestSourcePolicy(t *testing.T) {
	s := newSite(t)
	p, _ := s.policy(t, RetainTextOnly, "")
	if p.MaxResponseBytes != limits.ArchiveFetchResponseBytes || p.MaxRequests != limits.ArchiveFetchRequests ||
		p.MaxRedirects != limits.ArchiveFetchRedirects || p.DeadlineSeconds != int(limits.ArchiveFetchDeadline/time.Second) ||
		p.WindowSeconds != int64(limits.ArchiveFetchWindow/time.Second) || p.WindowRequests != limits.ArchiveFetchWindowRequests ||
		p.WindowBytes != limits.ArchiveFetchWindowBytes || p.MinIntervalSeconds != limits.ArchiveFetchMinIntervalSeconds {
		t.Fatalf("defaults %+v", p)
	}
	ctx := context.Background()
	for _, bad := range []string{
		`{"format": 1, "hosts": ["a.test"], "retention": "text_only"}`,
		`{"format": 1, "group": "g", "retention": "text_only"}`,
		`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "all"}`,
		`{"format": 2, "group": "g", "hosts": ["a.test"], "retention": "original"}`,
		`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "original", "extra": 1}`,
		`{"format": 1, "group": "g", "hosts": ["10.0.0.1"], "retention": "original"}`,
		`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "original", "max_redirects": 11}`,
		`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "original", "window_seconds": -1}`,
		`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "original", "ca_file": "x.pem"}`,
	} {
		if _, err := ParseSourcePolicy(ctx, []byte(bad), ""); fault.CodeOf(err) != fault.InvalidInput {
			t.Errorf("%s: %v", bad, err)
		}
	}
	_, err := ParseSourcePolicy(ctx, []byte(`{"format": 1, "group": "g", "hosts": ["a.test"], "retention": "original", "max_response_bytes": `+strconv.Itoa(limits.ArchiveMaxFileBytes+1)+`}`), "")
	wantCode(t, err, fault.Limit)
}

// TestFetchBounds holds the source policy's defaults at their edges.
func TestFetchBounds(t *testing.T) {
	s := newSite(t)
	a := newArchive(t)
	ctx := context.Background()
	// Bodies of no text, kept whole: the bounds are the fetch's, and
	// indexing megabytes of text would only cost time here.
	mib := strings.Repeat("x", limits.ArchiveFetchResponseBytes)
	s.page("/mib", "application/octet-stream", mib)
	s.page("/mib1", "application/octet-stream", mib+"x")
	for i := range 10 {
		n := i
		s.mux.HandleFunc("/hop"+strconv.Itoa(n), func(w http.ResponseWriter, r *http.Request) {
			if n == 0 {
				fmt.Fprint(w, "arrived")
				return
			}
			http.Redirect(w, r, "/hop"+strconv.Itoa(n-1), http.StatusFound)
		})
	}
	src := s.source(t, RetainOriginal, "")
	fetchOK(t, a, src, s.url("/mib"), "r-mib")
	_, err := a.Fetch(ctx, src, FetchRequest{URL: s.url("/mib1"), Request: "r-mib1", Task: "test"})
	wantCode(t, err, fault.Limit)

	fetchOK(t, a, s.source(t, RetainTextOnly, ""), s.url("/hop3"), "r-hop3")
	_, err = a.Fetch(ctx, s.source(t, RetainTextOnly, ""), FetchRequest{URL: s.url("/hop4"), Request: "r-hop4", Task: "test"})
	wantCode(t, err, fault.Limit)
	many := s.source(t, RetainTextOnly, `, "max_redirects": 9`)
	fetchOK(t, a, many, s.url("/hop4"), "r-requests-5")
	_, err = a.Fetch(ctx, s.source(t, RetainTextOnly, `, "max_redirects": 9`), FetchRequest{URL: s.url("/hop5"), Request: "r-requests-6", Task: "test"})
	if fault.CodeOf(err) != fault.Limit || !strings.Contains(err.Error(), "max_requests") {
		t.Fatalf("a sixth request: %v", err)
	}

	window := s.source(t, RetainTextOnly, "")
	for i := range limits.ArchiveFetchWindowRequests {
		fetchOK(t, a, window, s.url("/notes.txt"), "w"+strconv.Itoa(i))
	}
	_, err = a.Fetch(ctx, window, FetchRequest{URL: s.url("/notes.txt"), Request: "w-past", Task: "test"})
	wantCode(t, err, fault.Deferred)

	bytesWindow := s.source(t, RetainOriginal, "")
	for i := range limits.ArchiveFetchWindowBytes / limits.ArchiveFetchResponseBytes {
		fetchOK(t, a, bytesWindow, s.url("/mib"), "b"+strconv.Itoa(i))
	}
	_, err = a.Fetch(ctx, bytesWindow, FetchRequest{URL: s.url("/notes.txt"), Request: "b-past", Task: "test"})
	wantCode(t, err, fault.Deferred)

	s.mux.HandleFunc("/stall", func(w http.ResponseWriter, r *http.Request) { time.Sleep(1500 * time.Millisecond) })
	_, err = a.Fetch(ctx, s.source(t, RetainTextOnly, `, "deadline_seconds": 1`), FetchRequest{URL: s.url("/stall"), Request: "r-stall", Task: "test"})
	wantCode(t, err, fault.Limit)
	auditClean(t, a.dir)
}

// TestExampleSourcePolicy keeps examples/source-policy.json valid.
func TestExampleSourcePolicy(t *testing.T) {
	p, err := LoadSourcePolicy(context.Background(), filepath.Join("..", "..", "examples", "source-policy.json"))
	if err != nil || p.Retention != RetainOriginal || p.Group != "research" {
		t.Fatalf("%+v %v", p, err)
	}
}
