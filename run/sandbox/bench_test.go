package sandbox

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// benchHelper is the helper the benchmarks start: $SANDBOX_BENCH_HELPER
// (bench/run.sh sets it to capkit's own `capkit __sandbox`, whose start
// costs what capkit's does), else this test binary.
func benchHelper(b *testing.B) []string {
	if h := os.Getenv("SANDBOX_BENCH_HELPER"); h != "" {
		return strings.Fields(h)
	}
	return helperArgv(b)
}

// cpuTime is the CPU this process and its reaped children have used.
func cpuTime() time.Duration {
	var self, children syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &children)
	var d time.Duration
	for _, r := range []syscall.Rusage{self, children} {
		d += time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return d
}

// measured runs op b.N times, reporting its CPU (this process and its
// children) per op beside the wall clock; between ops, wait (untimed).
func measured(b *testing.B, op func(), wait func()) {
	var cpu time.Duration
	for b.Loop() {
		c := cpuTime()
		op()
		cpu += cpuTime() - c
		if wait != nil {
			b.StopTimer()
			c := cpuTime()
			wait()
			cpu += cpuTime() - c
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// BenchmarkRunTrue is the cost of a contained `true`: cold (starting the
// helper, building the container, exec, wait), and with a warm helper
// (Options.Warm): "warm" waits, untimed, for the next helper to be ready
// between calls, as a server's calls are spaced by a model's turns;
// "warm-back-to-back" does not, so the next helper's start (its CPU and
// any wait for it) is in each call. CPU counts the background starts in
// both. "full-small-helper" is "full" with this test binary (a fifth of
// capkit's size, few packages to initialise) as the helper;
// "full-static-helper" with $SANDBOX_BENCH_STATIC_HELPER (bench/run.sh:
// capkit built with CGO_ENABLED=0, which the dynamic loader does not
// start).
func BenchmarkRunTrue(b *testing.B) {
	for _, mode := range []string{"full", "full-small-helper", "full-static-helper", "reduced", "warm", "warm-back-to-back"} {
		b.Run(mode, func(b *testing.B) {
			root := b.TempDir()
			s := &Spec{Argv: []string{"/bin/true"}, Dir: root, Writable: []string{root}, Env: []string{"PATH=/usr/bin:/bin"}}
			o := &Options{Helper: benchHelper(b), Reduced: mode == "reduced"}
			switch mode {
			case "full-small-helper":
				o.Helper = helperArgv(b)
			case "full-static-helper":
				h := os.Getenv("SANDBOX_BENCH_STATIC_HELPER")
				if h == "" {
					b.Skip("no $SANDBOX_BENCH_STATIC_HELPER (bench/run.sh sets it)")
				}
				o.Helper = strings.Fields(h)
			}
			var wait func()
			if strings.HasPrefix(mode, "warm") {
				o.Warm = NewWarm()
				defer o.Warm.Close()
				if _, err := Run(context.Background(), s, o); err != nil {
					b.Fatal(err)
				}
				if mode == "warm" {
					wait = func() { waitWarm(b, o.Warm) }
					wait()
				}
			}
			measured(b, func() {
				res, err := Run(context.Background(), s, o)
				if err != nil || res.ExitCode != 0 || res.warm != (o.Warm != nil) {
					b.Fatal(err, res)
				}
			}, wait)
		})
	}
}

// BenchmarkBwrapTrue is the peer: bubblewrap starting `true` with every
// namespace unshared (bench/run.sh installs it).
func BenchmarkBwrapTrue(b *testing.B) {
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		b.Skip("bwrap is not installed (bench/run.sh installs it)")
	}
	measured(b, func() {
		if err := exec.Command(bwrap, "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true").Run(); err != nil {
			b.Fatal(err)
		}
	}, nil)
}

// BenchmarkNamespacesTrue is the floor of the cold path: this process
// starting /bin/true in the helper's namespaces (with its ID maps), no
// helper, no container.
func BenchmarkNamespacesTrue(b *testing.B) {
	measured(b, func() {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = helperAttr(true, false)
		cmd.SysProcAttr.AmbientCaps = nil
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}, nil)
}
