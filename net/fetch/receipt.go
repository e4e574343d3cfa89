package fetch

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"

	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/parse/sniff"
)

// Receipt says what a fetch did. It names no host path.
type Receipt struct {
	// URL is the URL asked for; FinalURL the one the body came from.
	URL      string `json:"url"`
	FinalURL string `json:"final_url"`
	// Redirects are the hops before the final one, in order.
	Redirects []Hop `json:"redirects"`
	Status    int   `json:"status"`
	// Protocol is the HTTP version of the final response.
	Protocol string `json:"protocol"`
	// Headers are selected response headers, names in lower case.
	Headers   map[string]string `json:"headers"`
	MediaType string            `json:"media_type"`
	// WireBytes counts body bytes received over all hops (redirect and
	// error bodies are read up to limits.FetchDrainBytes); ExpandedBytes
	// is the final body after its Content-Encoding was undone.
	WireBytes     int64   `json:"wire_bytes"`
	ExpandedBytes int64   `json:"expanded_bytes"`
	SHA256        string  `json:"sha256"`
	Timings       Timings `json:"timings"`
	// Charges are the budget reservations, one per request.
	Charges []Charge `json:"charges,omitempty"`
	// Sniff is the format check's report, with Options.Expect.
	Sniff *sniff.Report `json:"sniff,omitempty"`
}

// Hop is one redirect.
type Hop struct {
	URL      string `json:"url"`
	Status   int    `json:"status"`
	Location string `json:"location"`
}

// Charge is one budget reservation: Bytes were reserved before the
// request was sent, and settled down to what was received.
type Charge struct {
	Reservation string `json:"reservation"`
	Group       string `json:"group"`
	Task        string `json:"task"`
	Reserved    int64  `json:"reserved_bytes"`
}

// Timings are milliseconds since the fetch began (DNS, connect and TLS
// are summed over the hops that needed them).
type Timings struct {
	DNSMS       float64 `json:"dns_ms"`
	ConnectMS   float64 `json:"connect_ms"`
	TLSMS       float64 `json:"tls_ms"`
	FirstByteMS float64 `json:"first_byte_ms"`
	TotalMS     float64 `json:"total_ms"`
}

// trace records timings of one hop into t and sets sent once the request
// headers were written (from then on the server may have seen it).
func (t *Timings) trace(start time.Time, sent *bool) *httptrace.ClientTrace {
	var dns, conn, hs time.Time
	return &httptrace.ClientTrace{
		DNSStart:          func(httptrace.DNSStartInfo) { dns = time.Now() },
		DNSDone:           func(httptrace.DNSDoneInfo) { t.DNSMS += ms(time.Since(dns)) },
		ConnectStart:      func(string, string) { conn = time.Now() },
		ConnectDone:       func(string, string, error) { t.ConnectMS += ms(time.Since(conn)) },
		TLSHandshakeStart: func() { hs = time.Now() },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { t.TLSMS += ms(time.Since(hs)) },
		WroteHeaders:      func() { *sent = true },
		GotFirstResponseByte: func() {
			t.FirstByteMS = ms(time.Since(start))
		},
	}
}

func (rc *Receipt) record(r *budget.Reservation) {
	if r != nil {
		rc.Charges = append(rc.Charges, Charge{Reservation: r.ID, Group: r.Group, Task: r.Task, Reserved: r.Bytes})
	}
}

func (rc *Receipt) finish(u *url.URL, resp *http.Response) {
	rc.FinalURL = u.Redacted()
	rc.Status = resp.StatusCode
	rc.Protocol = resp.Proto
	rc.Headers = selectHeaders(resp.Header)
	rc.MediaType = mediaType(resp.Header.Get("Content-Type"))
}

// Text renders the receipt for a person.
func (rc *Receipt) Text() string {
	var b strings.Builder
	for _, h := range rc.Redirects {
		fmt.Fprintf(&b, "redirect %d %s -> %s\n", h.Status, h.URL, h.Location)
	}
	fmt.Fprintf(&b, "%d %s %s\n", rc.Status, rc.Protocol, rc.FinalURL)
	fmt.Fprintf(&b, "media type %s; %d bytes on the wire, %d expanded; sha256 %s\n", orNone(rc.MediaType), rc.WireBytes, rc.ExpandedBytes, rc.SHA256)
	fmt.Fprintf(&b, "%.1f ms (first byte at %.1f ms)", rc.Timings.TotalMS, rc.Timings.FirstByteMS)
	for _, c := range rc.Charges {
		fmt.Fprintf(&b, "\nbudget %s task %s: reservation %s (%d bytes reserved, settled to what was received)", c.Group, c.Task, c.Reservation, c.Reserved)
	}
	return b.String()
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
