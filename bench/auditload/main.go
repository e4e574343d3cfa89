// Command auditload measures what the audit sinks cost capkit serve per
// call: the server's CPU time per tools/call with no sink, with each sink
// (the hash-chained file, the PostgreSQL store, OpenTelemetry through
// capkit-otel) and with all three, side by side in one run.
//
// Each round starts one server per configuration, in turn (the order
// rotating from round to round, so that a shared machine's load falls on
// each alike), makes warm-up calls, then the measured read_file calls of
// a 4 KiB file one at a time, as an agent makes them. The CPU time is
// utime+stime (/proc/PID/stat) of the server and every process below it
// (capkit-otel), read before the measured calls and again a pause after
// them, so that the exporter's batched work for them is counted. The
// collector (otlptest's, in this process) and the PostgreSQL server are
// the other side and not counted. Linux only.
//
// -before names a second capkit binary (an earlier revision, its
// capkit-otel beside it): each configuration is then measured with both
// in every round, one after the other, and the table gives each and
// their ratio. -perf records each server's measured calls with perf
// record (cpu-clock, call graphs) into the directory it names, for perf
// report. -callgrind is for servers run under valgrind --tool=callgrind
// (a wrapper script as -capkit): their counters are zeroed after the
// warm-up and dumped after the calls (callgrind_control), so that the
// dumps count the measured calls' instructions, whatever the load.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/internal/testkit/otlptest"
)

// warmup calls precede the measured ones.
const warmup = 200

// config is one configuration measured: the top-level capkit.toml keys
// it adds, and whether it exports to the collector.
type config struct {
	name      string
	keys      func(dir string) string
	telemetry bool
}

func main() {
	capkit := flag.String("capkit", "", "the capkit binary (capkit-otel beside it)")
	dir := flag.String("dir", "", "a scratch directory (emptied)")
	pg := flag.String("pg", "", "a PostgreSQL URL for the store (empty: the store is not measured)")
	calls := flag.Int("calls", 10_000, "measured calls per server")
	rounds := flag.Int("rounds", 3, "rounds (each configuration once a round)")
	pause := flag.Duration("pause", 2*time.Second, "the wait after the calls before the CPU time is read again")
	before := flag.String("before", "", "a second capkit binary measured beside -capkit (capkit-otel beside it)")
	sinks := flag.String("sinks", "", "the configurations measured, comma-separated (none,file,postgres,otlp,all; empty: every one)")
	perf := flag.String("perf", "", "a directory for perf record's profile of each server's measured calls")
	cg := flag.Bool("callgrind", false, "the servers run under callgrind: zero its counters after the warm-up, dump them after the calls")
	flag.Parse()
	if *capkit == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	bins := []binary{{"", *capkit}}
	if *before != "" {
		bins = []binary{{"before", *before}, {"after", *capkit}}
	}
	configs, err := sinkConfigs(*pg, *sinks)
	if err == nil {
		err = run(bins, configs, *dir, *calls, *rounds, *pause, *perf, *cg)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "auditload:", err)
		os.Exit(1)
	}
}

// binary is a capkit binary measured, and its label ("" when it is the
// only one).
type binary struct{ label, path string }

func run(bins []binary, configs []config, dir string, calls, rounds int, pause time.Duration, perf string, cg bool) error {
	col := otlptest.New()
	defer col.Close()
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o755); err != nil {
		return err
	}
	file := filepath.Join(dir, "root", "small.txt")
	if err := os.WriteFile(file, []byte(strings.Repeat("a line of forty bytes, as text would be\n", 100)), 0o644); err != nil {
		return err
	}
	tick, err := clockTick()
	if err != nil {
		return err
	}
	results := map[string][]result{}
	for r := range rounds {
		for i := range configs {
			c := configs[(i+r)%len(configs)]
			for j := range bins {
				b := bins[(j+r)%len(bins)]
				res, err := measure(b, dir, file, col.URL(), c, r, calls, pause, tick, perf, cg)
				if err != nil {
					return fmt.Errorf("%s %s: %w", b.label, c.name, err)
				}
				col.Reset()
				results[rowName(b, c)] = append(results[rowName(b, c)], res)
			}
		}
	}
	report(bins, configs, results, calls, rounds)
	return nil
}

func rowName(b binary, c config) string { return strings.TrimSpace(b.label + " " + c.name) }

// result is one server's measurement, per call: CPU time in all, that of
// the processes below capkit (capkit-otel), and the median latency.
type result struct{ cpu, below, p50 time.Duration }

// sinkConfigs are the configurations measured: none, each sink, all, or
// those only names (none is always measured: the ratios are to it).
func sinkConfigs(pg, only string) ([]config, error) {
	none := func(string) string { return "" }
	file := func(dir string) string {
		return fmt.Sprintf("audit_log = %q\n", filepath.Join(dir, "logs", "audit.jsonl"))
	}
	store := func(dir string) string {
		return fmt.Sprintf("audit_store = %q\naudit_spool = %q\n", pg, filepath.Join(dir, "logs", "spool"))
	}
	cs := []config{{"none", none, false}, {"file", file, false}}
	all := file
	if pg != "" {
		cs = append(cs, config{"postgres", store, false})
		all = func(dir string) string { return file(dir) + store(dir) }
	}
	cs = append(cs, config{"otlp", none, true}, config{"all", all, true})
	if only == "" {
		return cs, nil
	}
	names := strings.Split(only, ",")
	for _, n := range names {
		if !slices.ContainsFunc(cs, func(c config) bool { return c.name == n }) {
			return nil, fmt.Errorf("-sinks: no configuration %q (postgres needs -pg)", n)
		}
	}
	return slices.DeleteFunc(cs, func(c config) bool { return c.name != "none" && !slices.Contains(names, c.name) }), nil
}

// measure starts a server with c's sinks, warms it up and measures the
// calls.
func measure(bin binary, dir, file, otlp string, c config, round, calls int, pause time.Duration, tick float64, perf string, cg bool) (result, error) {
	name := strings.ReplaceAll(rowName(bin, c), " ", "-")
	run := filepath.Join(dir, fmt.Sprintf("%s-%d", name, round))
	if err := os.MkdirAll(filepath.Join(run, "logs"), 0o755); err != nil {
		return result{}, err
	}
	cfg := filepath.Join(run, "capkit.toml")
	body := c.keys(run) + fmt.Sprintf("[[root]]\npath = %q\n[actor.assistant]\neffects = [\"read_file\"]\n[tool.read_file]\nmax_calls = %d\n", filepath.Join(dir, "root"), warmup+calls)
	if c.telemetry {
		body += fmt.Sprintf("[telemetry]\notlp_endpoint = %q\n", otlp)
	}
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		return result{}, err
	}
	cmd := exec.Command(bin.path, "serve", "--config", cfg)
	cmd.Stderr = os.Stderr
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "auditload", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return result{}, err
	}
	defer func() {
		cs.Close()
		cmd.Wait()
	}()
	read := func() error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": file}})
		if err == nil && res.IsError {
			err = errors.New("read_file failed")
		}
		return err
	}
	for range warmup {
		if err := read(); err != nil {
			return result{}, err
		}
	}
	time.Sleep(pause) // the warm-up's exports done
	pid := cmd.Process.Pid
	var stopPerf func() error
	if perf != "" {
		if stopPerf, err = record(pid, filepath.Join(perf, fmt.Sprintf("%s-%d.data", name, round))); err != nil {
			return result{}, err
		}
	}
	if cg {
		if err := callgrind(pid, "-z"); err != nil {
			return result{}, err
		}
	}
	cpu0, err := treeTicks(pid)
	if err != nil {
		return result{}, err
	}
	lat := make([]time.Duration, calls)
	for i := range calls {
		t0 := time.Now()
		if err := read(); err != nil {
			return result{}, err
		}
		lat[i] = time.Since(t0)
	}
	time.Sleep(pause)
	cpu1, err := treeTicks(pid)
	if err != nil {
		return result{}, err
	}
	if stopPerf != nil {
		if err := stopPerf(); err != nil {
			return result{}, err
		}
	}
	if cg {
		if err := callgrind(pid, "-d"); err != nil {
			return result{}, err
		}
	}
	slices.Sort(lat)
	perCall := func(t int64) time.Duration {
		return time.Duration(float64(t) / tick * float64(time.Second) / float64(calls))
	}
	return result{cpu: perCall(cpu1.own + cpu1.below - cpu0.own - cpu0.below), below: perCall(cpu1.below - cpu0.below), p50: lat[calls/2]}, nil
}

// callgrind runs callgrind_control with op on pid and every process
// below it.
func callgrind(pid int, op string) error {
	for _, p := range tree(pid) {
		if out, err := exec.Command("callgrind_control", op, p).CombinedOutput(); err != nil {
			return fmt.Errorf("callgrind_control %s %s: %v: %s", op, p, err, out)
		}
	}
	return nil
}

// tree is pid and the processes below it.
func tree(pid int) []string {
	pids := []string{strconv.Itoa(pid)}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		kids, _ := os.ReadFile(task)
		for _, k := range strings.Fields(string(kids)) {
			kid, _ := strconv.Atoi(k)
			pids = append(pids, tree(kid)...)
		}
	}
	return pids
}

// record starts perf record on pid and the processes below it, and
// returns what stops it.
func record(pid int, out string) (func() error, error) {
	pids := tree(pid)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command("perf", "record", "-q", "-e", "cpu-clock", "-g", "-o", out, "-p", strings.Join(pids, ","))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	time.Sleep(500 * time.Millisecond) // perf attached
	return func() error {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait() // perf ends by the signal it was sent
		if _, err := os.Stat(out); err != nil {
			return fmt.Errorf("perf record wrote no profile: %w", err)
		}
		return nil
	}, nil
}

// ticks are CPU time in clock ticks: a process's own and that of every
// process below it.
type ticks struct{ own, below int64 }

// treeTicks is utime+stime of pid and of every process below it.
func treeTicks(pid int) (ticks, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ticks{}, err
	}
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// After the command: state(0) ... utime(11) stime(12).
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	t := ticks{own: u + st}
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		kids, _ := os.ReadFile(task)
		for _, k := range strings.Fields(string(kids)) {
			kid, _ := strconv.Atoi(k)
			n, err := treeTicks(kid)
			if err != nil {
				return ticks{}, err
			}
			t.below += n.own + n.below
		}
	}
	return t, nil
}

// clockTick is the kernel's clock ticks per second (getconf CLK_TCK).
func clockTick() (float64, error) {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
}

func median(rs []result, f func(result) time.Duration) time.Duration {
	s := make([]time.Duration, len(rs))
	for i, r := range rs {
		s[i] = f(r)
	}
	slices.Sort(s)
	return s[len(s)/2]
}

func us(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Nanoseconds())/1e3) }

// report prints a row per binary and configuration: the ratio is to the
// same binary's none.
func report(bins []binary, configs []config, results map[string][]result, calls, rounds int) {
	cpu := func(r result) time.Duration { return r.cpu }
	fmt.Printf("%d read_file calls (4 KiB) per server, %d rounds; medians over the rounds\n\n", calls, rounds)
	fmt.Println("| sinks | server CPU per call | × none | each round | of which capkit-otel | latency p50 |")
	fmt.Println("|---|---:|---:|---|---:|---:|")
	for _, c := range configs {
		for _, b := range bins {
			base := median(results[rowName(b, config{name: "none"})], cpu)
			rs := results[rowName(b, c)]
			var each []string
			for _, r := range rs {
				each = append(each, us(r.cpu))
			}
			m := median(rs, cpu)
			fmt.Printf("| %s | %s µs | %.2f | %s | %s µs | %s µs |\n", rowName(b, c), us(m), float64(m)/float64(base), strings.Join(each, ", "),
				us(median(rs, func(r result) time.Duration { return r.below })), us(median(rs, func(r result) time.Duration { return r.p50 })))
		}
	}
}
