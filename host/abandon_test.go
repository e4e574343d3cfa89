package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/capkit/capkit/fault"
)

// processCPU is the CPU time the test process has used so far.
func processCPU(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestAbandonedCallsStopUsingCPU: each tool that loops over its input,
// given a deadline far shorter than its work, returns limit, and the
// process's CPU time stops growing within a second: no handler keeps
// computing after its call was abandoned. (glob and grep have the same
// test in files/tools.)
func TestAbandonedCallsStopUsingCPU(t *testing.T) {
	if testing.Short() {
		t.Skip("writes about 250 MB")
	}
	dir := fixture(t)
	rw := filepath.Join(dir, "rw")
	write := func(name string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(rw, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(rw, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("big.csv", bytes.Repeat([]byte("alpha,beta,\"gamma, delta\",42\n"), 1_000_000))
	write("big.json", []byte("["+strings.Repeat(`{"a": [1, 2.5, "x"], "b": {"c": null}},`, 600_000)+"0]"))
	write("big.txt", bytes.Repeat([]byte("the quick brown fox jumps over the lazy dog\n"), 2_500_000))
	for i := range 3000 {
		write(fmt.Sprintf("tree/%02d/%04d.txt", i%30, i), nil)
	}
	tools := []struct {
		name string
		args string
	}{
		{"csv_scan", `{"path": "big.csv", "filter": [{"column": "beta", "value": "never"}]}`},
		{"json_validate", `{"path": "big.json"}`},
		{"text_validate", `{"path": "big.txt"}`},
		{"passages_find", `{"path": "big.txt", "query": "the lazy cat", "ignore_case": true}`},
		{"file_digest", `{"path": "big.txt"}`},
		{"tree_list", `{"path": "tree"}`},
		{"dir_tree", `{"path": "tree"}`},
	}
	doc := base
	for _, tool := range tools {
		doc += fmt.Sprintf("[tool.%s]\ntimeout = \"20ms\"\n", tool.name)
	}
	h, err := New(load(t, dir, doc), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	s, err := h.NewSession("assistant", false)
	if err != nil {
		t.Fatal(err)
	}
	limited := 0
	for _, tool := range tools {
		_, err := s.Call(context.Background(), tool.name, json.RawMessage(tool.args))
		switch fault.CodeOf(err) {
		case fault.Limit:
			limited++
		case "":
		default:
			t.Fatalf("%s: %v", tool.name, err)
		}
	}
	if limited < len(tools)/2 {
		t.Fatalf("only %d of %d calls reached their deadline: the inputs are too small to test abandonment", limited, len(tools))
	}
	const grace, window = time.Second, 2 * time.Second
	time.Sleep(grace)
	before := processCPU(t)
	time.Sleep(window)
	if used := processCPU(t) - before; used > window/10 {
		t.Fatalf("the process used %v of CPU in the %v after the calls returned (%d abandoned at their deadline)", used, window, limited)
	}
}
