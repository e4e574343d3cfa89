// Command grepbench times capkit's grep tool in process, through the
// kernel (admission, bounds, audit) as a server would call it, so that
// process start does not dominate: it registers the file tools, starts
// one session granted search on -root, makes -warm unmeasured calls and
// then -reps measured ones, and prints the median wall seconds of one
// call, the median CPU seconds (user+system, getrusage) of one call, and
// the entries found. With -list FILE it then pages through the whole
// result (head_limit at its maximum, offset by offset) and writes every
// entry to FILE, one a line: "path:line" in content mode (the text is left
// out: capkit cuts long lines and shows invalid UTF-8 as U+FFFD), the path
// in files_with_matches mode, "path:count" in count mode, paths relative
// to -root, so that bench/grep.sh can compare them with ripgrep's.
//
//	grepbench -root DIR -args '{"pattern":"func","output_mode":"count"}'
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"strings"
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
	list := flag.String("list", "", "write every entry of the result to this file")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the calls to this file")
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
	if *memProfile != "" {
		runtime.MemProfileRate = 1
	}
	if err := run(*root, *args, *reps, *warm, *list); err != nil {
		fmt.Fprintln(os.Stderr, "grepbench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
	if *memProfile != "" {
		f, err := os.Create(*memProfile)
		if err == nil {
			err = pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "grepbench:", err)
			os.Exit(1)
		}
	}
}

func run(root, args string, reps, warm int, list string) error {
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
	if list == "" {
		return nil
	}
	return writeEntries(s, args, list)
}

// writeEntries pages through the call's whole result and writes its
// entries to path.
func writeEntries(s *kernel.Session, args, path string) error {
	var in map[string]any
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return err
	}
	content := in["output_mode"] == nil || in["output_mode"] == "content"
	in["head_limit"] = limits.GrepMaxHeadLimit
	var out []byte
	for offset := 0; ; {
		in["offset"] = offset
		page, err := json.Marshal(in)
		if err != nil {
			return err
		}
		res, err := s.Call(context.Background(), tools.Grep, page)
		if err != nil {
			return err
		}
		var r tools.GrepResult
		if err := json.Unmarshal(res.Structured, &r); err != nil {
			return err
		}
		text := res.Text
		for line := range strings.Lines(text) {
			line = strings.TrimSuffix(line, "\n")
			if strings.HasPrefix(line, "(") {
				continue // the summary and notes
			}
			if content {
				// path:line:text; the path may hold ':' but not ":N:"
				// followed by the text, so cut at the last such field
				// before the text: the first ":digits:" from the left.
				if i := entryLineEnd(line); i > 0 {
					line = line[:i]
				}
			}
			out = append(append(out, line...), '\n')
		}
		if r.NextOffset == 0 {
			break
		}
		offset = r.NextOffset
	}
	return os.WriteFile(path, out, 0o644)
}

// entryLineEnd returns the end of "path:line" in a content entry
// "path:line:text": the first ":digits:" in it.
func entryLineEnd(entry string) int {
	for i := 0; i < len(entry); i++ {
		if entry[i] != ':' {
			continue
		}
		j := i + 1
		for j < len(entry) && '0' <= entry[j] && entry[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(entry) && entry[j] == ':' {
			return j
		}
	}
	return -1
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
