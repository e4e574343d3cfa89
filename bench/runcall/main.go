// Command runcall measures what an agent pays per contained command: the
// wall time of one `run_shell {"command": "true"}` call over MCP on a
// live `capkit serve` (stdio, one call at a time, as an agent makes
// them; the server keeps the next container built ahead), beside a fresh
// `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true`
// started from the same process, the two alternating so that both see
// the same load. Before each of them it waits -pause (an agent reads a
// result before it calls again; the server builds the next container
// meanwhile).
//
// It prints the median of each side, the median of the rounds' ratios
// (capkit / bwrap), the server's CPU per call (its own, and its
// children's: the helpers and the commands), and with -back-to-back the
// median of calls made with no pause and no bwrap between them (each
// then waits for the container the previous call's end started).
//
//	go run ./bench/runcall -capkit bin/capkit -config capkit.toml [-rounds 101] [-pause 50ms] [-back-to-back]
//
// The configuration must grant run_shell on a root. Linux only.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	capkit := flag.String("capkit", "capkit", "the capkit binary")
	config := flag.String("config", "", "the capkit.toml served (granting run_shell)")
	rounds := flag.Int("rounds", 101, "measured calls of each side")
	pause := flag.Duration("pause", 50*time.Millisecond, "wait before each call and each bwrap")
	tool := flag.String("tool", "run_shell", "the tool called (another shows the MCP path alone)")
	args := flag.String("args", `{"command": "true"}`, "its arguments")
	backToBack := flag.Bool("back-to-back", false, "also time calls with no pause and no bwrap between them")
	flag.Parse()
	if *config == "" {
		log.Fatal("runcall: -config is required")
	}
	ctx := context.Background()
	server := exec.Command(*capkit, "serve", "--config", *config)
	client := mcp.NewClient(&mcp.Implementation{Name: "runcall", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: server}, nil)
	if err != nil {
		log.Fatalf("runcall: connect: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		log.Fatalf("runcall: tools/list: %v", err)
	}
	call := func() time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: *tool, Arguments: json.RawMessage(*args)})
		d := time.Since(start)
		if err != nil || res.IsError {
			log.Fatalf("runcall: %s: %v %+v", *tool, err, res)
		}
		return d
	}
	bwrap := func() time.Duration {
		start := time.Now()
		if out, err := exec.Command("bwrap", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "true").CombinedOutput(); err != nil {
			log.Fatalf("runcall: bwrap: %v: %s", err, out)
		}
		return time.Since(start)
	}
	for range 5 {
		time.Sleep(*pause)
		call()
		bwrap()
	}
	fmt.Printf("load average before: %s\n", loadAverage())
	self0, kids0 := cpu(server.Process.Pid)
	var a, b, r []float64
	for range *rounds {
		time.Sleep(*pause)
		x := call()
		time.Sleep(*pause)
		y := bwrap()
		a, b, r = append(a, ms(x)), append(b, ms(y)), append(r, float64(x)/float64(y))
	}
	self1, kids1 := cpu(server.Process.Pid)
	fmt.Printf("| %s over MCP vs a fresh bwrap true, pause %v | %.1f ms | %.1f ms | %.2f | server CPU %.2f ms + helpers and commands %.2f ms a call | %d rounds |\n",
		*tool, *pause, median(a), median(b), median(r), (self1-self0)/float64(*rounds), (kids1-kids0)/float64(*rounds), *rounds)
	if *backToBack {
		var c []float64
		for range *rounds {
			c = append(c, ms(call()))
		}
		fmt.Printf("| %s over MCP, back to back | %.1f ms | | | | %d calls |\n", *tool, median(c), *rounds)
	}
	fmt.Printf("load average after: %s\n", loadAverage())
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// cpu is the CPU milliseconds of process pid (utime+stime) and of its
// children it has waited for (cutime+cstime), from /proc/PID/stat.
func cpu(pid int) (self, children float64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		log.Fatalf("runcall: %v", err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	tick := func(i int) float64 {
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			log.Fatalf("runcall: /proc/%d/stat: %v", pid, err)
		}
		return v * 1000 / clockTicks
	}
	// utime, stime, cutime, cstime are fields 14-17 of stat(5): 11-14 here.
	return tick(11) + tick(12), tick(13) + tick(14)
}

// clockTicks is USER_HZ, 100 on every Linux architecture Go supports.
const clockTicks = 100
