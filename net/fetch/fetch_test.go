package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/limits"
)

func hello(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, "hello from loopback")
}

// wantCode fails unless err carries code and mentions every part.
func wantCode(t *testing.T, err error, code fault.Code, parts ...string) {
	t.Helper()
	if got := fault.CodeOf(err); got != code {
		t.Fatalf("got %v (%s), want %s", err, got, code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
	if r := testkit.Repeated(err.Error()); r != "" {
		t.Fatalf("error %q says %q twice", err, r)
	}
}

func TestFetchThroughReviewedException(t *testing.T) {
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(hello), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1") // proxies are ignored
	f := newFetcher(t, loopbackPolicy(t, ca, port, ""), &Options{Resolver: d.Resolver()})
	res, err := f.Fetch(context.Background(), fmt.Sprintf("https://example.com:%d/greeting#frag", port))
	if err != nil {
		t.Fatal(err)
	}
	want := "hello from loopback"
	sum := sha256.Sum256([]byte(want))
	rc := res.Receipt
	if string(res.Body) != want || rc.SHA256 != hex.EncodeToString(sum[:]) || rc.Status != 200 ||
		rc.MediaType != "text/plain" || rc.WireBytes != int64(len(want)) || rc.ExpandedBytes != int64(len(want)) ||
		rc.FinalURL != fmt.Sprintf("https://example.com:%d/greeting", port) || rc.Protocol != "HTTP/1.1" {
		t.Fatalf("body %q receipt %+v", res.Body, rc)
	}
}

func TestLoopbackWithoutExceptionIsDenied(t *testing.T) {
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(hello), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	cases := []struct {
		policy string
		rule   string
	}{
		{fmt.Sprintf(`{"format": 1, "ports": [%d], "ca_file": "ca.pem"}`, port), "loopback"},
		{`{"format": 1, "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"}`, fmt.Sprintf("port %d", port)},
		{fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["10.0.0.0/8"], "ca_file": "ca.pem"}`, port), "loopback"},
	}
	for _, c := range cases {
		f := newFetcher(t, policyFile(t, ca, c.policy), &Options{Resolver: d.Resolver()})
		_, err := f.Fetch(context.Background(), fmt.Sprintf("https://example.com:%d/", port))
		wantCode(t, err, fault.Denied, c.rule)
		var de *DeniedError
		if !errors.As(err, &de) {
			t.Fatalf("%v does not carry a DeniedError", err)
		}
	}
}

func TestDNSRebindingIsCaughtAtDial(t *testing.T) {
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(hello), "example.com")
	// The "public" answer is the one loopback address the policy reviewed
	// in; the next answers turn the name inward.
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1", "169.254.169.254", "127.0.0.2"}})
	p := policyFile(t, ca, fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.1/32"], "ca_file": "ca.pem"}`, port))
	url := fmt.Sprintf("https://example.com:%d/", port)
	if _, err := newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), url); err != nil {
		t.Fatalf("first resolution: %v", err)
	}
	_, err := newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), url)
	wantCode(t, err, fault.Denied, "169.254.169.254", "link-local")
	_, err = newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), url)
	wantCode(t, err, fault.Denied, "127.0.0.2", "loopback")
}

func TestRedirectsIntoPrivateSpaceAreDenied(t *testing.T) {
	ca := nettest.NewCA(t)
	var port int
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", hello)
	mux.HandleFunc("/chain/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/chain/"), "%d", &n)
		http.SetCookie(w, &http.Cookie{Name: "s", Value: "secret"})
		if r.Header.Get("Cookie") != "" {
			http.Error(w, "cookie forwarded", http.StatusTeapot)
			return
		}
		if n == 0 {
			http.Redirect(w, r, "/ok", http.StatusFound)
			return
		}
		http.Redirect(w, r, fmt.Sprintf("/chain/%d", n-1), http.StatusMovedPermanently)
	})
	for path, loc := range map[string]string{
		"/to-metadata": "https://169.254.169.254/latest/meta-data/",
		"/to-internal": "https://internal.test:%d/",
		"/to-http":     "http://example.com/",
		"/to-userinfo": "https://user:pw@example.com:%d/",
		"/to-numeric":  "https://2130706433:%d/",
		"/to-v6":       "https://[::1]:%d/",
	} {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			target := loc
			if strings.Contains(loc, "%d") {
				target = fmt.Sprintf(loc, port)
			}
			http.Redirect(w, r, target, http.StatusTemporaryRedirect)
		})
	}
	port = ca.Serve(t, mux, "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}, "internal.test": {"10.1.2.3"}})
	base := fmt.Sprintf("https://example.com:%d", port)
	p := loopbackPolicy(t, ca, port, `, "max_redirects": 3`)
	for path, rule := range map[string]string{
		"/to-metadata": "link-local", "/to-internal": "10.1.2.3", "/to-http": "only https",
		"/to-userinfo": "userinfo", "/to-numeric": "number in disguise", "/to-v6": "loopback",
	} {
		_, err := newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), base+path)
		wantCode(t, err, fault.Denied, rule)
	}
	// Three redirects are allowed, a fourth is not; cookies never return.
	res, err := newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), base+"/chain/2")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Receipt.Redirects) != 3 || res.Receipt.Redirects[0].Status != 301 || res.Receipt.FinalURL != base+"/ok" {
		t.Fatalf("redirects %+v final %s", res.Receipt.Redirects, res.Receipt.FinalURL)
	}
	_, err = newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), base+"/chain/3")
	wantCode(t, err, fault.Limit, "max_redirects")
	// max_requests counts every hop of every fetch of one fetcher.
	f := newFetcher(t, loopbackPolicy(t, ca, port, `, "max_requests": 4`), &Options{Resolver: d.Resolver()})
	if _, err := f.Fetch(context.Background(), base+"/chain/2"); err != nil { // 4 requests
		t.Fatal(err)
	}
	_, err = f.Fetch(context.Background(), base+"/ok")
	wantCode(t, err, fault.Limit, "max_requests")
}

func gzipped(t *testing.T, n int) []byte {
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	z.Write(make([]byte, n))
	z.Close()
	return b.Bytes()
}

func TestBodyBounds(t *testing.T) {
	ca := nettest.NewCA(t)
	const max = 64 * 1024
	bomb := gzipped(t, 16*limits.MiB) // about 16 KiB on the wire
	mux := http.NewServeMux()
	mux.HandleFunc("/size/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/size/"), "%d", &n)
		if r.URL.Query().Get("chunked") != "" {
			w.(http.Flusher).Flush() // no Content-Length
		} else {
			w.Header().Set("Content-Length", fmt.Sprint(n))
		}
		w.Write(bytes.Repeat([]byte("a"), n))
	})
	mux.HandleFunc("/gzip/", func(w http.ResponseWriter, r *http.Request) {
		var n int
		fmt.Sscanf(strings.TrimPrefix(r.URL.Path, "/gzip/"), "%d", &n)
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(gzipped(t, n))
	})
	mux.HandleFunc("/bomb", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(bomb)
	})
	mux.HandleFunc("/br", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "br")
		w.Write([]byte("xx"))
	})
	port := ca.Serve(t, mux, "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	p := loopbackPolicy(t, ca, port, fmt.Sprintf(`, "max_response_bytes": %d, "max_expanded_bytes": %d`, max, max))
	base := fmt.Sprintf("https://example.com:%d", port)
	get := func(path string) (*Response, error) {
		return newFetcher(t, p, &Options{Resolver: d.Resolver()}).Fetch(context.Background(), base+path)
	}
	for _, path := range []string{fmt.Sprintf("/size/%d", max), fmt.Sprintf("/size/%d?chunked=1", max), fmt.Sprintf("/gzip/%d", max)} {
		res, err := get(path)
		if err != nil || res.Receipt.ExpandedBytes != max {
			t.Fatalf("%s at the bound: %v", path, err)
		}
	}
	res, _ := get(fmt.Sprintf("/gzip/%d", max))
	if res.Receipt.WireBytes >= max || res.Receipt.Headers["content-encoding"] != "gzip" {
		t.Fatalf("gzip receipt %+v", res.Receipt)
	}
	_, err := get(fmt.Sprintf("/size/%d", max+1))
	wantCode(t, err, fault.Limit, "Content-Length", "max_response_bytes")
	_, err = get(fmt.Sprintf("/size/%d?chunked=1", max+1))
	wantCode(t, err, fault.Limit, "on the wire")
	_, err = get(fmt.Sprintf("/gzip/%d", max+1))
	wantCode(t, err, fault.Limit, "max_expanded_bytes")
	_, err = get("/bomb")
	wantCode(t, err, fault.Limit, "max_expanded_bytes")
	_, err = get("/br")
	wantCode(t, err, fault.HTTP, `"br"`)
}

func TestTricklingServerEndsAtTheDeadline(t *testing.T) {
	ca := nettest.NewCA(t)
	stop := make(chan struct{})
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000000")
		for {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
				w.Write([]byte("x"))
				w.(http.Flusher).Flush()
			}
		}
	}), "example.com")
	defer close(stop)
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	f := newFetcher(t, loopbackPolicy(t, ca, port, `, "deadline_seconds": 1`), &Options{Resolver: d.Resolver()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // hang guard only
	defer cancel()
	_, err := f.Fetch(ctx, fmt.Sprintf("https://example.com:%d/", port))
	wantCode(t, err, fault.Limit, "deadline_seconds")
}

func TestTLSFailures(t *testing.T) {
	ca := nettest.NewCA(t)
	now := time.Now()
	expired := ca.Leaf(t, []string{"example.com"}, now.Add(-48*time.Hour), now.Add(-24*time.Hour))
	wrongName := ca.Leaf(t, []string{"other.example"}, now.Add(-time.Hour), now.Add(time.Hour))
	stranger := nettest.NewCA(t).Leaf(t, []string{"example.com"}, now.Add(-time.Hour), now.Add(time.Hour))
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	for name, c := range map[string]struct {
		cert tls.Certificate
		want string
	}{
		"expired":           {expired, "expired"},
		"wrong name":        {wrongName, "not valid for this name"},
		"unknown authority": {stranger, "unknown authority"},
	} {
		_, port := ca.Server(t, c.cert, http.HandlerFunc(hello))
		f := newFetcher(t, loopbackPolicy(t, ca, port, ""), &Options{Resolver: d.Resolver()})
		_, err := f.Fetch(context.Background(), fmt.Sprintf("https://example.com:%d/", port))
		if fault.CodeOf(err) != fault.TLS || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want tls mentioning %q", name, err, c.want)
		}
	}
	// Without ca_file the test CA is unknown.
	port := ca.Serve(t, http.HandlerFunc(hello), "example.com")
	f := newFetcher(t, policyFile(t, ca, fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.0/8"]}`, port)), &Options{Resolver: d.Resolver()})
	_, err := f.Fetch(context.Background(), fmt.Sprintf("https://example.com:%d/", port))
	wantCode(t, err, fault.TLS, "unknown authority")
}

func TestHTTPStatusFailures(t *testing.T) {
	ca := nettest.NewCA(t)
	port := ca.Serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var code int
		fmt.Sscanf(r.URL.Path, "/%d", &code)
		if code == 429 {
			w.Header().Set("Retry-After", "120")
		}
		w.WriteHeader(code)
	}), "example.com")
	d := nettest.StartDNS(t, map[string][]string{"example.com": {"127.0.0.1"}})
	for _, code := range []int{400, 403, 404, 429, 500, 503, 304} {
		f := newFetcher(t, loopbackPolicy(t, ca, port, ""), &Options{Resolver: d.Resolver()})
		_, err := f.Fetch(context.Background(), fmt.Sprintf("https://example.com:%d/%d", port, code))
		wantCode(t, err, fault.HTTP, fmt.Sprintf("HTTP %d", code))
		var se *StatusError
		if !errors.As(err, &se) || se.Status != code || se.Receipt.Status != code {
			t.Fatalf("%d: cause %+v", code, se)
		}
		if code == 429 && !strings.Contains(err.Error(), "Retry-After 120") {
			t.Fatalf("429 message %q", err)
		}
	}
}

// oddReader returns data in reads of varying sizes.
type oddReader struct {
	data []byte
	n    int
}

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.n = r.n%7919 + 1
	k := copy(p[:min(len(p), r.n*37)], r.data)
	r.data = r.data[k:]
	return k, nil
}

func TestReadAllHashesWhatItReads(t *testing.T) {
	data := make([]byte, 3*hashChunk+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	want := sha256.Sum256(data)
	for _, length := range []int64{-1, int64(len(data)), 100} {
		body, sum, err := readAll(&oddReader{data: data}, length, int64(len(data))+1)
		if err != nil || !bytes.Equal(body, data) || !bytes.Equal(sum, want[:]) {
			t.Fatalf("length %d: %d bytes, err %v, hash ok %v", length, len(body), err, bytes.Equal(sum, want[:]))
		}
	}
	body, _, err := readAll(&oddReader{data: data}, -1, 1000)
	if err != nil || len(body) != 1000 {
		t.Fatalf("at max: %d %v", len(body), err)
	}
}
