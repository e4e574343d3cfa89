package tools

import (
	"bytes"
	"context"
	"regexp"
	"runtime"
	"testing"
	"time"

	"github.com/capkit/capkit/internal/testkit"

	"golang.org/x/sys/unix"
)

// threadCPU is the CPU time of the calling thread.
func threadCPU(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScan streams 8 MiB through one scanner, counting matching
// lines, for each kind of pattern the prefilter treats differently. It
// also reports the throughput in the thread's CPU time (cpu-MB/s), which
// the other processes of a loaded machine disturb less than wall time.
func BenchmarkScan(b *testing.B) {
	data := testkit.GoSource(8 << 20)
	for _, c := range []struct {
		name, expr string
		fold       bool
	}{
		{"literal", "ErrShortBuffer", false},
		{"literal-common", "context", false},
		{"literal-upper", "Errorf", false},
		{"literal-absent", "xcontext", false},
		{"fold-literal", "(?i)CONTEXT", true},
		{"regex-prefix", `func \(s \*server\d+\) handle`, false},
		{"regex-no-literal", `[A-Z][a-z]+[0-9]{4}\b`, false},
		{"regex-no-literal-bench", `[A-Z][a-z]+[0-9]{3}[a-z]`, false},
		{"fold-regex-no-literal", `(?i)[a-z]+[0-9]{3}x`, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			expr := "(?m)" + c.expr
			re := regexp.MustCompile(expr)
			sc := newScanner()
			o := &scanOpts{m: newMatcher(re, expr, c.fold), mode: modeCount}
			b.SetBytes(int64(len(data)))
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			cpu0 := threadCPU(b)
			for b.Loop() {
				res := &fileResult{}
				if err := sc.search(context.Background(), bytes.NewReader(data), o, res); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := threadCPU(b) - cpu0; cpu > 0 {
				b.ReportMetric(float64(len(data))*float64(b.N)/cpu.Seconds()/1e6, "cpu-MB/s")
			}
		})
	}
}
