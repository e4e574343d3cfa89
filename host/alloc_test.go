package host

import (
	"context"
	"encoding/json"
	"runtime"
	"runtime/metrics"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// heapSampler records the highest live heap until stopped.
func heapSampler() (stop func() uint64) {
	var peak atomic.Uint64
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	return func() uint64 { close(done); <-finished; return peak.Load() }
}

// sizedArgs builds arguments for a tool from its input schema: every
// property present (strings short, numbers large), and the string
// property big filled so that the encoded arguments are size bytes.
func sizedArgs(s *jsonschema.Schema, big string, size int64) json.RawMessage {
	args := map[string]any{}
	for name, p := range s.Properties {
		switch p.Type {
		case "string":
			args[name] = "a.txt"
		case "integer", "number":
			args[name] = 1 << 40
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		}
	}
	if big != "" {
		args[big] = ""
		empty, _ := json.Marshal(args)
		args[big] = strings.Repeat("a", max(int(size)-len(empty), 0))
	}
	data, _ := json.Marshal(args)
	return data
}

// TestAllocationPropertyAllTools drives every tool of a host with every
// group registered with each of its string arguments at the tool's input
// bound (and its arguments one byte past it), and checks that the peak live heap stays
// within a small multiple of the tool's bounds and that the host answers
// the next call. A buffer sized from input before a bound is checked
// fails this test (or kills the process).
func TestAllocationPropertyAllTools(t *testing.T) {
	if testing.Short() {
		t.Skip("drives every tool with bound-sized arguments")
	}
	if raceDetector {
		// Instrumented, its hundreds of bound-sized calls take many
		// minutes, and a heap bound is no question for the race detector:
		// scripts/test.sh runs this test without it.
		t.Skip("a property of allocations, run without -race")
	}
	dir := fixture(t)
	cfg := load(t, dir, base+`
[actor.all]
effects = ["read_file", "write_file", "edit_file", "move_file", "list", "search", "parse", "tool_search",
  "state_write", "archive_read", "archive_write", "journal_read", "journal_write"]
`)
	h, s := startSession(t, cfg, "all")
	entries := h.Runtime.Catalog().Entries()
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	caps := s.Capabilities()
	for _, e := range entries {
		if !caps.Grants(e.Effect) {
			continue // a tool that needs more configuration than this host's
		}
		p, _ := h.Runtime.Policy(e.Name)
		in, _, err := e.Schemas()
		if err != nil {
			t.Fatal(err)
		}
		var strs []string
		for name, prop := range in.Properties {
			if prop.Type == "string" {
				strs = append(strs, name)
			}
		}
		sort.Strings(strs)
		// What the kernel and the tool may hold at once: copies of the
		// arguments (decoded, validated), the result, the tool's buffers.
		bound := 12*uint64(p.MaxInputBytes) + 4*uint64(p.MaxOutputBytes) + 64*limits.MiB
		for i, big := range strs {
			sizes := []int64{p.MaxInputBytes}
			if i == 0 {
				// Past the bound the kernel refuses before decoding,
				// whichever member is large: once per tool is enough.
				sizes = append(sizes, p.MaxInputBytes+1)
			}
			for _, size := range sizes {
				args := sizedArgs(in, big, size)
				runtime.GC()
				before := liveHeap()
				stop := heapSampler()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := s.Call(ctx, e.Name, args)
				cancel()
				peak := stop()
				if res != nil {
					res.Release()
				}
				code := fault.CodeOf(err)
				if size > p.MaxInputBytes && code != fault.Limit {
					t.Errorf("%s %s past the input bound: %q (%v)", e.Name, big, code, err)
				}
				if code == fault.Internal {
					t.Errorf("%s %s at %d bytes: internal failure %v", e.Name, big, size, err)
				}
				if peak > before+bound {
					t.Errorf("%s %s at %d bytes: peak heap grew %d MiB, over %d MiB", e.Name, big, size, (peak-before)>>20, bound>>20)
				}
				if _, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`)); err != nil {
					t.Fatalf("after %s: the next call failed: %v", e.Name, err)
				}
			}
		}
	}
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
