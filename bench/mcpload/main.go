// Command mcpload runs one MCP workload against several stdio MCP servers
// with the same Go SDK client, and reports, per scenario and server, calls
// per second, p50/p99 latency, the server's CPU time per call and its peak
// resident memory, plus the time from start to the initialize response.
//
// Each scenario runs on a fresh server process: warm-up calls first, then
// the measured calls, one at a time (as an agent makes them). The server's
// CPU time is utime+stime of its process (/proc/PID/stat) read before and
// after the measured calls; its peak memory is VmHWM (/proc/PID/status)
// after them. Linux only.
//
// Servers are named by kind, which decides the tool and arguments each
// scenario uses (the servers' tools differ; each scenario uses the
// server's natural equivalent):
//
//	-server capkit='bin/capkit serve --root {dir}'
//	-server reference='node .../server-filesystem/dist/index.js {dir}'
//
// {dir} is replaced with the fixture directory, which -dir names and
// mcpload fills (it removes what it created there before).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// tsDriver is the TypeScript client's script (-ts), or "" for the Go one.
var tsDriver string

type serverFlag struct {
	kind string // capkit or reference
	cmd  []string
}

type serverFlags []serverFlag

func (s *serverFlags) String() string { return fmt.Sprint(*s) }

func (s *serverFlags) Set(v string) error {
	kind, cmd, ok := strings.Cut(v, "=")
	if !ok || (kind != "capkit" && kind != "reference") {
		return errors.New(`want capkit=CMD or reference=CMD`)
	}
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return errors.New("empty command")
	}
	*s = append(*s, serverFlag{kind, f})
	return nil
}

func main() {
	var servers serverFlags
	flag.Var(&servers, "server", "kind=command (kind capkit or reference); repeatable")
	dir := flag.String("dir", "", "fixture directory (created; emptied of mcpload's files)")
	scale := flag.Float64("scale", 1, "multiplies every scenario's call count")
	startups := flag.Int("startups", 10, "start-up measurements per server")
	md := flag.String("md", "", "write the markdown report here (default stdout)")
	results := flag.String("results", "", "replace (or add) the report's section in this markdown file")
	section := flag.String("section", "MCP server vs reference filesystem server", "the section's title in -results")
	notes := flag.String("notes", "", "a markdown file appended to the report (analysis kept beside the script)")
	command := flag.String("command", "", "the command line to print in the report")
	only := flag.String("only", "", "comma-separated scenarios to run (default all)")
	flag.StringVar(&tsDriver, "ts", "", "drive the servers with the TypeScript SDK client: the path of tsclient.mjs, beside a node_modules holding the SDK (default: the Go SDK client)")
	flag.Parse()
	if len(servers) == 0 || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(servers, *dir, *scale, *startups, *md, *command, *only, *results, *section, *notes); err != nil {
		fmt.Fprintln(os.Stderr, "mcpload:", err)
		os.Exit(1)
	}
}

func run(servers serverFlags, dir string, scale float64, startups int, mdPath, command, only, results, section, notes string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	fx, err := makeFixture(dir)
	if err != nil {
		return fmt.Errorf("fixture: %w", err)
	}
	tick := clockTick()
	var rows []row
	for _, sc := range scenarios(fx) {
		if only != "" && !slices.Contains(strings.Split(only, ","), sc.name) {
			continue
		}
		n := max(1, int(math.Round(float64(sc.calls)*scale)))
		if sc.name == "edit_1mib" && n+sc.warmup > fx.editMarkers {
			return fmt.Errorf("edit_1mib: %d calls need more than the file's %d markers", n+sc.warmup, fx.editMarkers)
		}
		for _, s := range servers {
			fmt.Fprintf(os.Stderr, "%-10s %-9s %d calls...\n", sc.name, s.kind, n)
			r, err := measure(s, sc, n, dir, tick)
			if err != nil {
				return fmt.Errorf("%s on %s: %w", sc.name, s.kind, err)
			}
			rows = append(rows, r)
		}
	}
	var starts []startup
	for _, s := range servers {
		if startups <= 0 {
			break
		}
		fmt.Fprintf(os.Stderr, "%-10s %-9s %d starts...\n", "startup", s.kind, startups)
		st, err := measureStartup(s, dir, startups)
		if err != nil {
			return fmt.Errorf("startup of %s: %w", s.kind, err)
		}
		starts = append(starts, st)
	}
	var b strings.Builder
	if err := report(&b, rows, starts, command); err != nil {
		return err
	}
	if notes != "" {
		data, err := os.ReadFile(notes)
		if err != nil {
			return err
		}
		b.WriteString("\n")
		b.Write(data)
	}
	if results != "" {
		if err := replaceSection(results, section, b.String()); err != nil {
			return err
		}
	}
	if mdPath != "" {
		return os.WriteFile(mdPath, []byte(b.String()), 0o644)
	}
	if results == "" {
		_, err := io.WriteString(os.Stdout, b.String())
		return err
	}
	return nil
}

// replaceSection replaces the section "## title" of a markdown file (up to
// the next "## " heading) with body, or appends it.
func replaceSection(path, title, body string) error {
	data, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	heading := "## " + title
	text := string(data)
	section := heading + "\n\n" + strings.TrimRight(body, "\n") + "\n"
	lines := strings.SplitAfter(text, "\n")
	start, end := -1, len(lines)
	for i, l := range lines {
		if strings.TrimRight(l, "\n") == heading {
			start = i
			continue
		}
		if start >= 0 && i > start && strings.HasPrefix(l, "## ") {
			end = i
			break
		}
	}
	if start < 0 {
		if text != "" && !strings.HasSuffix(text, "\n\n") {
			text = strings.TrimRight(text, "\n") + "\n\n"
		}
		return os.WriteFile(path, []byte(text+section), 0o644)
	}
	rest := strings.Join(lines[end:], "")
	if rest != "" {
		section += "\n"
	}
	return os.WriteFile(path, []byte(strings.Join(lines[:start], "")+section+rest), 0o644)
}

// A scenario is a sequence of calls; each server kind has its own way of
// making them.
type scenario struct {
	name, what string
	calls      int
	warmup     int
	prepare    func() error // run before the server starts
	// call returns the tool and arguments of call i for a server kind.
	call map[string]func(i int) (string, map[string]any)
	// setup are calls made before warm-up, by server kind.
	setup map[string][]func() (string, map[string]any)
}

type fixture struct {
	small, big, edit, listDir, grepDir string
	editMarkers                        int
}

func scenarios(fx *fixture) []scenario {
	return []scenario{
		{
			name: "small_read", what: "read a 100-line (4 KiB) file", calls: 3000, warmup: 50,
			call: map[string]func(int) (string, map[string]any){
				"capkit":    func(int) (string, map[string]any) { return "read_file", map[string]any{"path": fx.small} },
				"reference": func(int) (string, map[string]any) { return "read_text_file", map[string]any{"path": fx.small} },
			},
		},
		{
			name: "read_4mib", what: "read a whole 4 MiB file (65,536 lines)", calls: 40, warmup: 3,
			call: map[string]func(int) (string, map[string]any){
				"capkit": func(int) (string, map[string]any) {
					return "read_file", map[string]any{"path": fx.big, "limit": 100_000}
				},
				"reference": func(int) (string, map[string]any) { return "read_text_file", map[string]any{"path": fx.big} },
			},
		},
		{
			name: "edit_1mib", what: "replace one unique string in a 1 MiB file", calls: 300, warmup: 10,
			prepare: func() error { return writeEditFile(fx) },
			setup: map[string][]func() (string, map[string]any){
				// capkit edits only files the session read; reading it first
				// costs the reference nothing it would not do anyway.
				"capkit": {func() (string, map[string]any) {
					return "read_file", map[string]any{"path": fx.edit, "limit": 10}
				}},
				"reference": {func() (string, map[string]any) {
					return "read_text_file", map[string]any{"path": fx.edit, "head": 10}
				}},
			},
			call: map[string]func(int) (string, map[string]any){
				"capkit": func(i int) (string, map[string]any) {
					return "edit_file", map[string]any{"path": fx.edit, "old_string": marker(i, "M"), "new_string": marker(i, "N")}
				},
				"reference": func(i int) (string, map[string]any) {
					return "edit_file", map[string]any{"path": fx.edit, "edits": []any{map[string]any{"oldText": marker(i, "M"), "newText": marker(i, "N")}}}
				},
			},
		},
		{
			name: "list_1000", what: "list a directory of 1,000 files", calls: 500, warmup: 20,
			call: map[string]func(int) (string, map[string]any){
				"capkit":    func(int) (string, map[string]any) { return "list_dir", map[string]any{"path": fx.listDir} },
				"reference": func(int) (string, map[string]any) { return "list_directory", map[string]any{"path": fx.listDir} },
			},
		},
		{
			name: "grep_2000", what: "search 2,000 files in 20 directories", calls: 100, warmup: 5,
			call: map[string]func(int) (string, map[string]any){
				// capkit searches contents (200 files hold the needle); the
				// reference has no content search: its search_files walks
				// the same tree matching names (200 names match).
				"capkit": func(int) (string, map[string]any) {
					return "grep", map[string]any{"pattern": "needle_[0-9]+", "path": fx.grepDir}
				},
				"reference": func(int) (string, map[string]any) {
					return "search_files", map[string]any{"path": fx.grepDir, "pattern": "**/*5.txt"}
				},
			},
		},
	}
}

func marker(i int, kind string) string { return fmt.Sprintf("@@%s%05d@@", kind, i) }

type row struct {
	scenario, what, server, tool string
	calls                        int
	elapsed                      time.Duration
	p50, p99                     time.Duration
	cpu                          time.Duration // server CPU over the measured calls
	hwm                          int64         // bytes
	respBytes                    int           // text bytes of one response
}

type startup struct {
	server      string
	median, max time.Duration
}

func expand(cmd []string, dir string) []string {
	out := make([]string, len(cmd))
	for i, a := range cmd {
		out[i] = strings.ReplaceAll(a, "{dir}", dir)
	}
	return out
}

func measure(s serverFlag, sc scenario, n int, dir string, tick float64) (row, error) {
	r := row{scenario: sc.name, what: sc.what, server: s.kind, calls: n}
	if sc.prepare != nil {
		if err := sc.prepare(); err != nil {
			return r, err
		}
	}
	if tsDriver != "" {
		return measureTS(r, s, sc, n, dir, tick)
	}
	args := expand(s.cmd, dir)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpload", Version: "1"}, nil)
	ctx := context.Background()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		return r, err
	}
	defer func() {
		cs.Close()
		cmd.Wait()
	}()
	if err := prime(ctx, cs, s.kind, sc, n); err != nil {
		return r, err
	}
	err = timeCalls(ctx, cs, cmd.Process.Pid, sc.call[s.kind], n, tick, &r)
	return r, err
}

// callTool calls tool and returns the bytes of its text content; a tool
// error is an error.
func callTool(ctx context.Context, cs *mcp.ClientSession, tool string, a map[string]any) (int, error) {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: a})
	if err != nil {
		return 0, err
	}
	size := 0
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			size += len(t.Text)
		}
	}
	if res.IsError {
		text := ""
		if len(res.Content) > 0 {
			if t, ok := res.Content[0].(*mcp.TextContent); ok {
				text = t.Text
			}
		}
		return size, fmt.Errorf("%s failed: %.300s", tool, text)
	}
	return size, nil
}

// prime runs the scenario's setup calls for server kind, then its warm-up
// calls.
func prime(ctx context.Context, cs *mcp.ClientSession, kind string, sc scenario, n int) error {
	for _, f := range sc.setup[kind] {
		tool, a := f()
		if _, err := callTool(ctx, cs, tool, a); err != nil {
			return err
		}
	}
	// Warm-up calls use the indices after the measured ones, so that edits
	// never repeat a marker.
	for i := range sc.warmup {
		tool, a := sc.call[kind](n + i)
		if _, err := callTool(ctx, cs, tool, a); err != nil {
			return err
		}
	}
	return nil
}

// timeCalls makes the n measured calls and records in r their latencies,
// the server's CPU time and its peak memory.
func timeCalls(ctx context.Context, cs *mcp.ClientSession, pid int, call func(int) (string, map[string]any), n int, tick float64, r *row) error {
	lat := make([]time.Duration, n)
	cpu0, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	for i := range n {
		tool, a := call(i)
		r.tool = tool
		t0 := time.Now()
		size, err := callTool(ctx, cs, tool, a)
		lat[i] = time.Since(t0)
		if err != nil {
			return err
		}
		r.respBytes = size
	}
	r.elapsed = time.Since(start)
	cpu1, err := cpuTicks(pid)
	if err != nil {
		return err
	}
	r.cpu = time.Duration(float64(cpu1-cpu0) / tick * float64(time.Second))
	if r.hwm, err = peakRSS(pid); err != nil {
		return err
	}
	slices.Sort(lat)
	r.p50 = lat[(n-1)*50/100]
	r.p99 = lat[(n-1)*99/100]
	return nil
}

// measureTS is measure with the TypeScript SDK client: tsclient.mjs
// makes the same calls (setup, warm-up, measured) and reports the server's
// CPU and memory and each call's latency.
func measureTS(r row, s serverFlag, sc scenario, n int, dir string, tick float64) (row, error) {
	type call [2]any
	var plan struct {
		Command []string `json:"command"`
		Setup   []call   `json:"setup"`
		Warmup  []call   `json:"warmup"`
		Calls   []call   `json:"calls"`
	}
	plan.Command = expand(s.cmd, dir)
	plan.Setup, plan.Warmup, plan.Calls = []call{}, []call{}, []call{}
	for _, f := range sc.setup[s.kind] {
		tool, a := f()
		plan.Setup = append(plan.Setup, call{tool, a})
	}
	for i := range sc.warmup {
		tool, a := sc.call[s.kind](n + i)
		plan.Warmup = append(plan.Warmup, call{tool, a})
	}
	for i := range n {
		tool, a := sc.call[s.kind](i)
		plan.Calls = append(plan.Calls, call{tool, a})
	}
	in, err := json.Marshal(plan)
	if err != nil {
		return r, err
	}
	// The plan goes in a file: node reads a pipe on its standard input
	// without waiting (EAGAIN) when the data is not there yet.
	f, err := os.CreateTemp("", "mcpload-plan-*.json")
	if err != nil {
		return r, err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(in); err != nil {
		f.Close()
		return r, err
	}
	if err := f.Close(); err != nil {
		return r, err
	}
	cmd := exec.Command("node", tsDriver, f.Name())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("tsclient.mjs: %w", err)
	}
	var res struct {
		Tool      string  `json:"tool"`
		CPUTicks  int64   `json:"cpu_ticks"`
		HWM       int64   `json:"hwm_bytes"`
		LatNS     []int64 `json:"lat_ns"`
		ElapsedNS int64   `json:"elapsed_ns"`
		RespBytes int     `json:"resp_bytes"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.LatNS) != n {
		return r, fmt.Errorf("tsclient.mjs printed %.300s: %v", out, err)
	}
	lat := make([]time.Duration, n)
	for i, v := range res.LatNS {
		lat[i] = time.Duration(v)
	}
	slices.Sort(lat)
	r.tool, r.hwm, r.respBytes = res.Tool, res.HWM, res.RespBytes
	r.elapsed = time.Duration(res.ElapsedNS)
	r.cpu = time.Duration(float64(res.CPUTicks) / tick * float64(time.Second))
	r.p50, r.p99 = lat[(n-1)*50/100], lat[(n-1)*99/100]
	return r, nil
}

// measureStartup times, k times, a fresh process from start to the
// response to its initialize request (written as soon as it starts).
func measureStartup(s serverFlag, dir string, k int) (startup, error) {
	st := startup{server: s.kind}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpload","version":"1"}}}` + "\n"
	var times []time.Duration
	for range k {
		args := expand(s.cmd, dir)
		cmd := exec.Command(args[0], args[1:]...)
		in, err := cmd.StdinPipe()
		if err != nil {
			return st, err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return st, err
		}
		t0 := time.Now()
		if err := cmd.Start(); err != nil {
			return st, err
		}
		if _, err := io.WriteString(in, init); err != nil {
			return st, err
		}
		line, err := bufio.NewReader(out).ReadBytes('\n')
		d := time.Since(t0)
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
		if err != nil {
			return st, err
		}
		var resp struct {
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(line, &resp) != nil || resp.Result == nil {
			return st, fmt.Errorf("unexpected initialize response %.200s", line)
		}
		times = append(times, d)
	}
	slices.Sort(times)
	st.median, st.max = times[len(times)/2], times[len(times)-1]
	return st, nil
}

// cpuTicks is utime+stime of a process, in clock ticks.
func cpuTicks(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return ut + st, nil
}

// peakRSS is VmHWM of a process, in bytes.
func peakRSS(pid int) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb * 1024, err
		}
	}
	return 0, errors.New("no VmHWM")
}

// clockTick is the kernel's USER_HZ, from getconf (100 on Linux).
func clockTick() float64 {
	out, err := exec.Command("getconf", "CLK_TCK").Output()
	if err == nil {
		if v, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); err == nil && v > 0 {
			return v
		}
	}
	return 100
}
