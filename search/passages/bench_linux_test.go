//go:build linux

package passages

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkExact runs the byte-exact matcher alone over the whole bench
// source, counting matches: Find's time is mostly the UTF-8 validation
// that runs beside it on a second core. It also reports the throughput in
// the thread's CPU time (cpu-MB/s), which the other processes of a loaded
// machine disturb less than wall time.
func BenchmarkExact(b *testing.B) {
	src := benchSource(b)
	for _, q := range []string{"needle", "fox", "zebra", "Zürich", "café"} {
		b.Run(q, func(b *testing.B) {
			m := newExactMatcher([]byte(q))
			b.SetBytes(int64(len(src)))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU(b)
			for b.Loop() {
				n := 0
				if err := m.each(context.Background(), src, func(int, int) bool { n++; return true }); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := threadCPU(b) - cpu0; cpu > 0 {
				b.ReportMetric(float64(len(src))*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
			}
		})
	}
}

// threadCPU is the CPU time of the calling thread.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
