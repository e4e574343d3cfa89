package exporter

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/limits"
)

// BenchmarkWrite: what a call's event costs capkit with telemetry on,
// the exporter being a program that reads and discards (its work is
// BenchmarkServe's in audit/telemetry). cpu-ns/event is this process's
// CPU time (getrusage) per event, the writing goroutine's included.
func BenchmarkWrite(b *testing.B) {
	s := startShell(b, "exec cat >/dev/null")
	e := call(1)
	b.ReportAllocs()
	cpu0 := cpuTime(b)
	b.ResetTimer()
	for range b.N {
		s.Write(e)
		if s.dropped.Load() > 0 {
			b.Fatal("dropped: the benchmark outruns the exporter")
		}
		s.mu.Lock()
		half := s.queued > limits.TelemetryQueueEvents/2
		s.mu.Unlock()
		if half {
			time.Sleep(limits.TelemetryFlushInterval)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Close(ctx); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/event")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
