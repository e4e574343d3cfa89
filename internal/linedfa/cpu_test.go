package linedfa

import (
	"os"
	"regexp"
	"runtime"
	"syscall"
	"testing"
	"time"
)

func threadCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestCPUSpeed(t *testing.T) {
	data, err := os.ReadFile("/tmp/gosrc/src64.txt")
	if err != nil || os.Getenv("CPUSPEED") == "" {
		t.Skip()
	}
	runtime.LockOSThread()
	for _, expr := range []string{`(?m)[A-Z][a-z]+[0-9]{3}[a-z]`, `(?m)[A-Z][a-z]+[0-9]{4}\b`, `(?m)func [A-Z][a-zA-Z]*Handler`} {
		l, _ := New(regexp.MustCompile(expr))
		s := l.NewSearcher()
		dfaLines(t, s, data)
		best := time.Hour
		for range 5 {
			c0 := threadCPU()
			dfaLines(t, s, data)
			best = min(best, threadCPU()-c0)
		}
		t.Logf("%-40s %6.0f MB/s (CPU)", expr, float64(len(data))/best.Seconds()/1e6)
	}
}

func scan4(trans []int32, cls *[256]uint8, data []byte) int {
	q := len(data) / 4
	i0, i1, i2, i3 := 0, q, 2*q, 3*q
	var s0, s1, s2, s3 int32
	n := 0
	for i0 < q {
		t0 := trans[int(s0)+int(cls[data[i0]])]
		t1 := trans[int(s1)+int(cls[data[i1]])]
		t2 := trans[int(s2)+int(cls[data[i2]])]
		t3 := trans[int(s3)+int(cls[data[i3]])]
		if t0|t1|t2|t3 < 0 {
			n++
			t0, t1, t2, t3 = max(t0, 0), max(t1, 0), max(t2, 0), max(t3, 0)
		}
		s0, s1, s2, s3 = t0, t1, t2, t3
		i0, i1, i2, i3 = i0+1, i1+1, i2+1, i3+1
	}
	return n
}

func TestCPUSpeed4(t *testing.T) {
	data, err := os.ReadFile("/tmp/gosrc/src64.txt")
	if err != nil || os.Getenv("CPUSPEED") == "" {
		t.Skip()
	}
	runtime.LockOSThread()
	for _, expr := range []string{`(?m)[A-Z][a-z]+[0-9]{3}[a-z]`, `(?m)[A-Z][a-z]+[0-9]{4}\b`, `(?m)func [A-Z][a-zA-Z]*Handler`} {
		l, _ := New(regexp.MustCompile(expr))
		s := l.NewSearcher()
		dfaLines(t, s, data)
		dfaLines(t, s, data)
		best := time.Hour
		n := 0
		for range 5 {
			c0 := threadCPU()
			n = scan4(s.trans, &l.classes, data)
			best = min(best, threadCPU()-c0)
		}
		t.Logf("%-40s %6.0f MB/s (CPU) %d", expr, float64(len(data))/best.Seconds()/1e6, n)
	}
}
