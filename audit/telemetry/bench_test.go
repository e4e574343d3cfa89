package telemetry

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"
)

// BenchmarkServe: the exporter's work per call event, from its input line
// to its span and metrics exported to a loopback receiver that drains
// each request and answers it (decoding nothing: the collector's work is
// not the exporter's). cpu-µs/event is the process's CPU time
// (getrusage) per event, both cores' worth.
func BenchmarkServe(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	defer srv.Close()
	e := event("read_file", "ok", "", 150*time.Microsecond)
	line := append(append([]byte{'e'}, e.JSON...), '\n')
	input := bytes.Repeat(line, b.N)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	if err := Serve(context.Background(), bytes.NewReader(input), Options{Endpoint: srv.URL}); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/float64(b.N), "cpu-µs/event")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
