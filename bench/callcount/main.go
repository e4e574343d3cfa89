// Command callcount measures what one tool call costs a capkit server, for
// several capkit binaries side by side (an old revision and a new one):
// the server's CPU time per call, the system calls it makes per call, and
// the source files and packages of capkit the call runs through.
//
// Every measurement is a difference between two runs of a fresh `capkit
// serve` (stdio, driven by the Go MCP SDK's client, tools listed first as
// clients do): one that makes the warm-up calls only, one that makes them
// and then -calls more. So start-up, warm-up and the client's own work
// cancel out, and what is left is -calls calls, divided by -calls.
//
//	-mode cpu     utime+stime of the server process (getrusage of the
//	              exited child), median over -rounds rounds, the binaries
//	              alternating within each round
//	-mode strace  the server run under strace -f -c: system calls per call,
//	              by name
//	-mode cover   binaries built with -cover -covermode=atomic
//	              -coverpkg=github.com/capkit/capkit/...: the source files
//	              whose coverage counters moved during the last call
//	              (-calls 1), and how often a few functions ran
//	              (-count: package.Func or package.Type.Method)
//
// The tools: edit_file (one unique replacement in a 4 KiB file the
// session read first: a marker toggled between two spellings) and
// file_copy (a 4 KiB file to a new name in an existing directory).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type binFlags [][2]string

func (b *binFlags) String() string { return fmt.Sprint(*b) }

func (b *binFlags) Set(v string) error {
	name, path, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want NAME=PATH")
	}
	*b = append(*b, [2]string{name, path})
	return nil
}

var (
	bins   binFlags
	srcs   binFlags
	counts multiFlag
	tool   = flag.String("tool", "edit_file", "edit_file or file_copy")
	mode   = flag.String("mode", "cpu", "cpu, strace or cover")
	warmup = flag.Int("warmup", 20, "warm-up calls in both runs")
	calls  = flag.Int("calls", 200, "calls measured (cover: 1)")
	rounds = flag.Int("rounds", 5, "rounds (cpu)")
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func main() {
	flag.Var(&bins, "bin", "NAME=PATH of a capkit binary; repeatable")
	flag.Var(&srcs, "src", "NAME=DIR: the source tree binary NAME was built from (cover)")
	flag.Var(&counts, "count", "a function whose calls to count (cover), as pkg/path.Func or pkg/path.Type.Method, or alternatives A|B (the first the tree has); repeatable")
	flag.Parse()
	if len(bins) == 0 {
		flag.Usage()
		os.Exit(2)
	}
	var err error
	switch *mode {
	case "cpu":
		err = cpu()
	case "strace":
		err = straceMode()
	case "cover":
		err = cover()
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "callcount:", err)
		os.Exit(1)
	}
}

// run starts a fresh server (argv, with the fixture's root), makes the
// warm-up calls and then extra more, and returns the exited process.
func run(argv []string, env []string, extra int) (*os.ProcessState, error) {
	dir, err := os.MkdirTemp("", "callcount-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := fixture(dir); err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], append(argv[1:], "serve", "--root", dir)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "callcount", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return nil, err
	}
	err = drive(ctx, cs, *warmup+extra)
	cs.Close()
	werr := cmd.Wait()
	if err != nil {
		return nil, fmt.Errorf("%w\n%s", err, stderr.Bytes())
	}
	if cmd.ProcessState == nil {
		return nil, fmt.Errorf("server did not exit: %v", werr)
	}
	return cmd.ProcessState, nil
}

// fixture writes a.txt (100 lines, 4 KiB, one marker) and src.bin
// (4 KiB), and the directory copies/.
func fixture(dir string) error {
	var b strings.Builder
	for i := range 100 {
		fmt.Fprintf(&b, "line %03d %s\n", i, strings.Repeat("x", 31))
		if i == 50 {
			b.WriteString("marker-even\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "src.bin"), []byte(strings.Repeat("0123456789abcdef", 256)), 0o644); err != nil {
		return err
	}
	return os.Mkdir(filepath.Join(dir, "copies"), 0o755)
}

// drive lists the tools, reads a.txt, then makes n calls of the tool.
func drive(ctx context.Context, cs *mcp.ClientSession, n int) error {
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return err
	}
	if err := call(ctx, cs, "read_file", map[string]any{"path": "a.txt"}); err != nil {
		return err
	}
	spelling := [2]string{"marker-even", "marker-odd"}
	for i := range n {
		var err error
		switch *tool {
		case "edit_file":
			err = call(ctx, cs, "edit_file", map[string]any{"path": "a.txt", "old_string": spelling[i%2], "new_string": spelling[(i+1)%2]})
		case "file_copy":
			err = call(ctx, cs, "file_copy", map[string]any{"source": "src.bin", "destination": fmt.Sprintf("copies/c-%d.bin", i)})
		default:
			err = fmt.Errorf("unknown tool %q", *tool)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func call(ctx context.Context, cs *mcp.ClientSession, name string, args map[string]any) error {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err
	}
	if res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				text = t.Text
			}
		}
		return fmt.Errorf("%s failed: %.300s", name, text)
	}
	return nil
}

func cpuOf(st *os.ProcessState) time.Duration { return st.UserTime() + st.SystemTime() }

// cpu prints the server CPU time per call of each binary: the median over
// the rounds of (CPU with the calls - CPU without them) / calls.
func cpu() error {
	per := make([][]time.Duration, len(bins))
	for r := range *rounds {
		for i, b := range bins {
			base, err := run([]string{b[1]}, nil, 0)
			if err != nil {
				return fmt.Errorf("%s: %w", b[0], err)
			}
			with, err := run([]string{b[1]}, nil, *calls)
			if err != nil {
				return fmt.Errorf("%s: %w", b[0], err)
			}
			per[i] = append(per[i], (cpuOf(with)-cpuOf(base))/time.Duration(*calls))
			fmt.Fprintf(os.Stderr, "round %d %s: %v per call\n", r+1, b[0], per[i][len(per[i])-1])
		}
	}
	fmt.Printf("| %s: server CPU per call (µs, median of %d rounds of %d calls) |", *tool, *rounds, *calls)
	for i, b := range bins {
		slices.Sort(per[i])
		fmt.Printf(" %s %.0f |", b[0], float64(per[i][len(per[i])/2].Nanoseconds())/1e3)
	}
	fmt.Println()
	return nil
}

// straceMode prints the system calls per call of each binary, in all and
// by name, from strace -f -c of a run with and a run without the calls.
func straceMode() error {
	per := make([]map[string]float64, len(bins))
	names := map[string]bool{}
	for i, b := range bins {
		count := func(extra int) (map[string]int, error) {
			out, err := os.CreateTemp("", "callcount-strace-")
			if err != nil {
				return nil, err
			}
			out.Close()
			defer os.Remove(out.Name())
			if _, err := run([]string{"strace", "-f", "-c", "-o", out.Name(), b[1]}, nil, extra); err != nil {
				return nil, err
			}
			return parseStrace(out.Name())
		}
		base, err := count(0)
		if err != nil {
			return fmt.Errorf("%s: %w", b[0], err)
		}
		with, err := count(*calls)
		if err != nil {
			return fmt.Errorf("%s: %w", b[0], err)
		}
		per[i] = map[string]float64{}
		for name, n := range with {
			if d := float64(n-base[name]) / float64(*calls); d >= 0.5 {
				per[i][name] = d
				names[name] = true
			}
		}
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	fmt.Printf("| %s: system calls per call |", *tool)
	for _, b := range bins {
		fmt.Printf(" %s |", b[0])
	}
	fmt.Printf("\n|---|%s\n", strings.Repeat("---|", len(bins)))
	total := make([]float64, len(bins))
	for _, n := range sorted {
		fmt.Printf("| %s |", n)
		for i := range bins {
			fmt.Printf(" %.1f |", per[i][n])
			total[i] += per[i][n]
		}
		fmt.Println()
	}
	fmt.Printf("| all |")
	for i := range bins {
		fmt.Printf(" %.1f |", total[i])
	}
	fmt.Printf("\n| all but the runtime's own (%s) |", strings.Join(runtimeCalls, ", "))
	for i := range bins {
		own := total[i]
		for _, n := range runtimeCalls {
			own -= per[i][n]
		}
		fmt.Printf(" %.1f |", own)
	}
	fmt.Println()
	return nil
}

// runtimeCalls are the system calls of Go's scheduler and timers (and
// strace's slowing of them), not of the call's work.
var runtimeCalls = []string{"futex", "nanosleep", "epoll_pwait", "sched_yield", "rt_sigprocmask", "rt_sigreturn", "tgkill", "getpid"}

// parseStrace reads the calls column of strace -c's summary.
func parseStrace(path string) (map[string]int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, l := range strings.Split(string(data), "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || f[0] == "%" || strings.HasPrefix(f[0], "-") || f[len(f)-1] == "total" {
			continue
		}
		var n int
		// % time, seconds, usecs/call, calls, [errors,] syscall
		if _, err := fmt.Sscan(f[3], &n); err != nil {
			continue
		}
		out[f[len(f)-1]] = n
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no strace summary in %s", path)
	}
	return out, nil
}

// cover prints, per binary, the capkit source files and packages whose
// coverage counters moved during the last call, and the calls of the
// -count functions in it.
func cover() error {
	type result struct {
		files, pkgs int
		funcs       map[string]int
		list        []string
	}
	res := make([]result, len(bins))
	for i, b := range bins {
		base, err := coverRun(b[1], 0)
		if err != nil {
			return fmt.Errorf("%s: %w", b[0], err)
		}
		with, err := coverRun(b[1], *calls)
		if err != nil {
			return fmt.Errorf("%s: %w", b[0], err)
		}
		files, pkgs := map[string]bool{}, map[string]bool{}
		for k, n := range with {
			if n > base[k] {
				f := k.file
				files[f] = true
				pkgs[filepath.Dir(f)] = true
			}
		}
		r := result{files: len(files), pkgs: len(pkgs), funcs: map[string]int{}}
		for f := range files {
			r.list = append(r.list, strings.TrimPrefix(f, module+"/"))
		}
		sort.Strings(r.list)
		src := ""
		for _, s := range srcs {
			if s[0] == b[0] {
				src = s[1]
			}
		}
		for _, spec := range counts {
			n, err := funcCalls(src, spec, base, with)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", b[0], spec, err)
			}
			r.funcs[spec] = n
		}
		res[i] = r
	}
	fmt.Printf("| %s, %d call | ", *tool, *calls)
	for _, b := range bins {
		fmt.Printf("%s | ", b[0])
	}
	fmt.Printf("\n|---|%s\n| capkit source files run through |", strings.Repeat("---|", len(bins)))
	for _, r := range res {
		fmt.Printf(" %d |", r.files)
	}
	fmt.Printf("\n| capkit packages run through |")
	for _, r := range res {
		fmt.Printf(" %d |", r.pkgs)
	}
	fmt.Println()
	for _, spec := range counts {
		fmt.Printf("| calls of %s |", strings.ReplaceAll(spec, "|", " or "))
		for _, r := range res {
			fmt.Printf(" %d |", r.funcs[spec])
		}
		fmt.Println()
	}
	for i, b := range bins {
		fmt.Fprintf(os.Stderr, "%s: %s\n", b[0], strings.Join(res[i].list, " "))
	}
	return nil
}

const module = "github.com/capkit/capkit"

type block struct {
	file               string
	line0, col0, line1 int
	col1               int
}

// coverRun runs the -cover binary with extra calls and returns every
// block's counter.
func coverRun(bin string, extra int) (map[block]int, error) {
	dir, err := os.MkdirTemp("", "callcount-cover-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if _, err := run([]string{bin}, []string{"GOCOVERDIR=" + dir}, extra); err != nil {
		return nil, err
	}
	txt := filepath.Join(dir, "profile.txt")
	if out, err := exec.Command("go", "tool", "covdata", "textfmt", "-i="+dir, "-o="+txt).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("covdata: %v: %s", err, out)
	}
	data, err := os.ReadFile(txt)
	if err != nil {
		return nil, err
	}
	out := map[block]int{}
	for _, l := range strings.Split(string(data), "\n")[1:] {
		var b block
		var stmts, n int
		i := strings.LastIndex(l, ":")
		if i < 0 {
			continue
		}
		b.file = l[:i]
		if _, err := fmt.Sscanf(l[i+1:], "%d.%d,%d.%d %d %d", &b.line0, &b.col0, &b.line1, &b.col1, &stmts, &n); err != nil {
			continue
		}
		out[b] += n
	}
	return out, nil
}
