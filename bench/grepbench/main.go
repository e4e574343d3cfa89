// Command grepbench times capkit's grep tool in process, through the
// kernel (admission, bounds, audit) as a server would call it, so that
// process start does not dominate: it registers the file tools, starts
// one session granted search on -root, makes -warm unmeasured calls and
// then -reps measured ones, and prints the median wall seconds of one
// call, the median CPU seconds (user+system, getrusage) of one call, and
// the entries found.
//
//	grepbench -root DIR -args '{"pattern":"func","output_mode":"count"}'
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"syscall"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func main() {
	root := flag.String("root", "", "the directory searched (absolute)")
	args := flag.String("args", "", "grep's arguments, as JSON")
	reps := flag.Int("reps", 5, "measured calls")
	warm := flag.Int("warm", 1, "unmeasured calls first")
	profile := flag.String("cpuprofile", "", "write a CPU profile of the measured calls to this file")
	traceTo := flag.String("trace", "", "write an execution trace of the calls to this file")
	flag.Parse()
	if *traceTo != "" {
		f, err := os.Create(*traceTo)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "grepbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		defer trace.Stop()
	}
	if *profile != "" {
		f, err := os.Create(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "grepbench:", err)
			os.Exit(1)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "grepbench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if err := run(*root, *args, *reps, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "grepbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func run(root, args string, reps, warm int) error {
	b := kernel.NewBuilder(&kernel.Options{PolicyOverride: func(p kernel.Policy) kernel.Policy {
		if p.Name == tools.Grep {
			p = kernel.Policy{Name: p.Name, MaxCalls: limits.HardMaxCalls, Timeout: limits.HardMaxTimeout, MaxOutputBytes: limits.HardMaxOutputBytes}
		}
		return p
	}})
	// grep only reads: no gate is needed.
	if err := tools.RegisterTools(b, &tools.ToolOptions{DisableGate: true}); err != nil {
		return err
	}
	rt, err := b.Build()
	if err != nil {
		return err
	}
	grant, err := capability.New("bench", []capability.Effect{capability.Search}, capability.Scope{Roots: []string{root}})
	if err != nil {
		return err
	}
	s, err := rt.NewSession("bench", []capability.Capability{grant}, nil)
	if err != nil {
		return err
	}
	var times, cpus []float64
	var total int
	for i := range warm + reps {
		start, cpu0 := time.Now(), cpuSeconds()
		res, err := s.Call(context.Background(), tools.Grep, json.RawMessage(args))
		if err != nil {
			return err
		}
		if i >= warm {
			times = append(times, time.Since(start).Seconds())
			cpus = append(cpus, cpuSeconds()-cpu0)
		}
		var out tools.GrepResult
		if err := json.Unmarshal(res.Structured, &out); err != nil {
			return err
		}
		total = out.Total
	}
	slices.Sort(times)
	slices.Sort(cpus)
	fmt.Printf("%.4f %.4f %d\n", times[len(times)/2], cpus[len(cpus)/2], total)
	return nil
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
