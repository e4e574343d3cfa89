package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"
)

// goalCPU lists the scenarios the CPU goal (at most a fifth of the
// reference's per call) applies to.
var goalCPU = map[string]bool{"small_read": true, "read_4mib": true, "edit_1mib": true}

func ms(d time.Duration) string { return fmt.Sprintf("%.3f", float64(d)/float64(time.Millisecond)) }

func report(w io.Writer, rows []row, starts []startup, command string) error {
	var b strings.Builder
	if command != "" {
		fmt.Fprintf(&b, "Produced by:\n\n```\n%s\n```\n\n", command)
	}
	writeMeasured(&b, rows)
	writeRatios(&b, rows)
	if len(starts) > 0 {
		writeStartups(&b, starts)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// loadAverage is the machine's load when the run ended (/proc/loadavg), as
// a sentence, or nothing where it cannot be read: on a shared machine the
// figures are read with it.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return ""
	}
	return fmt.Sprintf(" Load average at the end of the run: %s, %s, %s (1, 5, 15 minutes).", f[0], f[1], f[2])
}

// writeMeasured writes how the figures were taken, the workload and one
// row per scenario and server.
func writeMeasured(b *strings.Builder, rows []row) {
	client := "the Go MCP SDK over stdio, protocol 2025-11-25"
	if tsDriver != "" {
		client = "the MCP TypeScript SDK's client (bench/mcpload/tsclient.mjs; Claude Code's and Claude Desktop's) over stdio, protocol 2025-11-25, tools listed first"
	}
	fmt.Fprintf(b, "Measured %s on %s/%s, %d CPUs. Same client for both servers: %s, one call at a time; "+
		"each scenario on a fresh server process, after warm-up calls. Server CPU is utime+stime of the server process (/proc/PID/stat) over the measured calls; "+
		"peak RSS is its VmHWM (/proc/PID/status).%s\n\n",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), client, loadAverage())

	b.WriteString("Workload (each server's natural equivalent of each step):\n\n")
	b.WriteString("| scenario | what | capkit | reference |\n|---|---|---|---|\n")
	for _, w := range workload {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", w[0], w[1], w[2], w[3])
	}
	b.WriteString("\nThe servers' answers differ in form: capkit's read_file numbers the lines (cat -n style, a few more bytes) and sends the text once, with a small " +
		"structured summary; the reference sends the file's text twice (as text content and again as structured content). capkit's grep searches file " +
		"contents; the reference has no content search, so its row is search_files, which walks the same 2,000 files matching names. capkit's edit_file " +
		"requires that the session read the file first (one read before warm-up, on both servers) and makes each edit durable (temporary file, fsync, rename); " +
		"the reference's returns a diff of the whole file.\n\n")
	b.WriteString("| scenario | server | tool | calls | calls/s | p50 ms | p99 ms | server CPU/call ms | peak RSS MiB | response text KiB |\n")
	b.WriteString("|---|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(b, "| %s | %s | %s | %d | %.1f | %s | %s | %s | %.1f | %.1f |\n",
			r.scenario, r.server, r.tool, r.calls, float64(r.calls)/r.elapsed.Seconds(), ms(r.p50), ms(r.p99),
			ms(r.cpu/time.Duration(r.calls)), float64(r.hwm)/(1<<20), float64(r.respBytes)/1024)
	}
}

// writeRatios writes capkit's figures over the reference's for each
// scenario both servers ran.
func writeRatios(b *strings.Builder, rows []row) {
	type pair struct{ c, r *row }
	var order []string
	pairs := map[string]*pair{}
	for i := range rows {
		r := &rows[i]
		p := pairs[r.scenario]
		if p == nil {
			p = &pair{}
			pairs[r.scenario] = p
			order = append(order, r.scenario)
		}
		if r.server == "capkit" {
			p.c = r
		} else {
			p.r = r
		}
	}
	ratioRows := 0
	var rb strings.Builder
	rb.WriteString("\ncapkit against the goals (ratios capkit / reference, from the rows above):\n\n")
	rb.WriteString("| scenario | what | CPU/call ratio (goal ≤ 0.20) | calls/s ratio (goal ≥ 1) | peak RSS ratio (goal ≤ 0.33) |\n")
	rb.WriteString("|---|---|---:|---:|---:|\n")
	for _, name := range order {
		p := pairs[name]
		if p.c == nil || p.r == nil {
			continue
		}
		ratioRows++
		cpu := "n/a"
		if p.r.cpu > 0 {
			ratio := float64(p.c.cpu) / float64(p.c.calls) / (float64(p.r.cpu) / float64(p.r.calls))
			cpu = fmt.Sprintf("%.3f", ratio)
			if goalCPU[name] {
				cpu += mark(ratio <= 0.20)
			} else {
				cpu += " (no goal)"
			}
		}
		rate := (float64(p.c.calls) / p.c.elapsed.Seconds()) / (float64(p.r.calls) / p.r.elapsed.Seconds())
		rss := float64(p.c.hwm) / float64(p.r.hwm)
		fmt.Fprintf(&rb, "| %s | %s | %s | %.2f%s | %.3f%s |\n", name, p.c.what, cpu, rate, mark(rate >= 1), rss, mark(rss <= 1.0/3))
	}
	if ratioRows > 0 {
		b.WriteString(rb.String())
	}
}

// writeStartups writes each server's start-up times.
func writeStartups(b *strings.Builder, starts []startup) {
	b.WriteString("\nStart-up, from starting the process to reading its response to `initialize` (goal for capkit: under 50 ms):\n\n")
	b.WriteString("| server | median ms | max ms |\n|---|---:|---:|\n")
	for _, s := range starts {
		fmt.Fprintf(b, "| %s | %s | %s |\n", s.server, ms(s.median), ms(s.max))
	}
}

// workload describes the scenarios for the report.
var workload = [][4]string{
	{"small_read", "read a 100-line (4 KiB) file", "`read_file {path}`", "`read_text_file {path}`"},
	{"read_4mib", "read a whole 4 MiB file (65,536 lines)", "`read_file {path, limit: 100000}` (output bound raised to 8 MiB by the bench's configuration)", "`read_text_file {path}`"},
	{"edit_1mib", "replace one unique string in a 1 MiB file", "`edit_file {path, old_string, new_string}`", "`edit_file {path, edits: [{oldText, newText}]}`"},
	{"list_1000", "list a directory of 1,000 files", "`list_dir {path}`", "`list_directory {path}`"},
	{"grep_2000", "search 2,000 files in 20 directories", "`grep {pattern: \"needle_[0-9]+\", path}` (contents; 200 files match)", "`search_files {path, pattern: \"**/*5.txt\"}` (names; 200 match)"},
}

func mark(ok bool) string {
	if ok {
		return " ✓"
	}
	return " ✗"
}
