// Package otlptest is an OpenTelemetry collector for tests: an HTTP
// server on loopback that takes OTLP/HTTP exports (protobuf, as the Go
// SDK's otlptracehttp and otlpmetrichttp exporters send them), decodes
// them with the official proto types and keeps what they hold. Hold makes
// it a collector that does not answer; Unreachable names one that is away.
package otlptest

import (
	"bytes"
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Collector is a running test collector.
type Collector struct {
	srv *httptest.Server

	mu      sync.Mutex
	spans   []*tracepb.Span
	metrics []*metricpb.Metric
	// Bodies are the raw request bodies, decompressed, for tests that
	// look for what must not be exported.
	bodies [][]byte
	// held, while not nil, holds every request until it is closed.
	held chan struct{}
}

// Start starts a collector, stopped when the test ends.
func Start(t testing.TB) *Collector {
	t.Helper()
	c := New()
	t.Cleanup(c.Close)
	return c
}

// New starts a collector (for a benchmark program); Close stops it.
func New() *Collector {
	c := &Collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(c.serve))
	return c
}

// Close releases the held requests and stops the collector.
func (c *Collector) Close() {
	c.Release()
	c.srv.Close()
}

// Hold makes the collector take export requests and answer none of them
// until Release: a collector too slow to keep up.
func (c *Collector) Hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held == nil {
		c.held = make(chan struct{})
	}
}

// Release answers the held requests, and those after them, again.
func (c *Collector) Release() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held != nil {
		close(c.held)
		c.held = nil
	}
}

// Unreachable is the OTLP/HTTP base URL of a loopback port nothing
// listens on: a collector that is away.
func Unreachable(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// URL is the collector's OTLP/HTTP base URL.
func (c *Collector) URL() string { return c.srv.URL }

func (c *Collector) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	held := c.held
	c.mu.Unlock()
	if held != nil {
		select {
		case <-held:
		case <-r.Context().Done():
			return
		}
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if body, err = io.ReadAll(zr); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	var resp proto.Message
	switch r.URL.Path {
	case "/v1/traces":
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		resp = &coltracepb.ExportTraceServiceResponse{}
	case "/v1/metrics":
		var req colmetricpb.ExportMetricsServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rm := range req.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				c.metrics = append(c.metrics, sm.Metrics...)
			}
		}
		c.mu.Unlock()
		resp = &colmetricpb.ExportMetricsServiceResponse{}
	default:
		http.NotFound(w, r)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, body)
	c.mu.Unlock()
	out, _ := proto.Marshal(resp)
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Reset forgets what was received.
func (c *Collector) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spans, c.metrics, c.bodies = nil, nil, nil
}

// Spans are the spans received so far.
func (c *Collector) Spans() []*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*tracepb.Span(nil), c.spans...)
}

// Metrics are the metrics received so far (each export's, in order).
func (c *Collector) Metrics() []*metricpb.Metric {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*metricpb.Metric(nil), c.metrics...)
}

// Bodies are the export requests' bodies so far.
func (c *Collector) Bodies() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([][]byte(nil), c.bodies...)
}

// Attrs are key-values as a map of their values' string or integer form.
func Attrs(kvs []*commonpb.KeyValue) map[string]any {
	m := map[string]any{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = v.BoolValue
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = v.DoubleValue
		}
	}
	return m
}

// Sum is the last value of a counter named name with attribute key equal
// to value (every data point of the last export that has it), and whether
// it was seen.
func (c *Collector) Sum(name, key, value string) (int64, bool) {
	var total int64
	seen := false
	ms := c.Metrics()
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Name != name || m.GetSum() == nil {
			continue
		}
		for _, dp := range m.GetSum().DataPoints {
			if value == "" || Attrs(dp.Attributes)[key] == value {
				total += dp.GetAsInt()
				seen = true
			}
		}
		if seen {
			return total, true
		}
	}
	return 0, false
}
