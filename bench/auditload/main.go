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
	flag.Parse()
	if *capkit == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*capkit, *dir, *pg, *calls, *rounds, *pause); err != nil {
		fmt.Fprintln(os.Stderr, "auditload:", err)
		os.Exit(1)
	}
}

func run(capkit, dir, pg string, calls, rounds int, pause time.Duration) error {
	col := otlptest.New()
	defer col.Close()
	configs := sinkConfigs(pg)
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
			res, err := measure(capkit, dir, file, col.URL(), c, r, calls, pause, tick)
			if err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			col.Reset()
			results[c.name] = append(results[c.name], res)
		}
	}
	report(configs, results, calls, rounds)
	return nil
}

// result is one server's measurement, per call: CPU time in all, that of
// the processes below capkit (capkit-otel), and the median latency.
type result struct{ cpu, below, p50 time.Duration }

// sinkConfigs are the configurations measured: none, each sink, all.
func sinkConfigs(pg string) []config {
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
	return append(cs, config{"otlp", none, true}, config{"all", all, true})
}

// measure starts a server with c's sinks, warms it up and measures the
// calls.
func measure(capkit, dir, file, otlp string, c config, round, calls int, pause time.Duration, tick float64) (result, error) {
	run := filepath.Join(dir, fmt.Sprintf("%s-%d", c.name, round))
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
	cmd := exec.Command(capkit, "serve", "--config", cfg)
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
	slices.Sort(lat)
	perCall := func(t int64) time.Duration {
		return time.Duration(float64(t) / tick * float64(time.Second) / float64(calls))
	}
	return result{cpu: perCall(cpu1.own + cpu1.below - cpu0.own - cpu0.below), below: perCall(cpu1.below - cpu0.below), p50: lat[calls/2]}, nil
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

func report(configs []config, results map[string][]result, calls, rounds int) {
	cpu := func(r result) time.Duration { return r.cpu }
	base := median(results["none"], cpu)
	fmt.Printf("%d read_file calls (4 KiB) per server, %d rounds; medians over the rounds\n\n", calls, rounds)
	fmt.Println("| sinks | server CPU per call | × none | each round | of which capkit-otel | latency p50 |")
	fmt.Println("|---|---:|---:|---|---:|---:|")
	for _, c := range configs {
		rs := results[c.name]
		var each []string
		for _, r := range rs {
			each = append(each, us(r.cpu))
		}
		m := median(rs, cpu)
		fmt.Printf("| %s | %s µs | %.2f | %s | %s µs | %s µs |\n", c.name, us(m), float64(m)/float64(base), strings.Join(each, ", "),
			us(median(rs, func(r result) time.Duration { return r.below })), us(median(rs, func(r result) time.Duration { return r.p50 })))
	}
}
