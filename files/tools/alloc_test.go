package tools_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/files/tree"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// peakHeap samples the live heap from a goroutine until stop is called,
// returning the highest sample.
func peakHeap() (stop func() uint64) {
	var peak atomic.Uint64
	done := make(chan struct{})
	finished := make(chan struct{})
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	go func() {
		defer close(finished)
		for {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak.Load() {
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

// TestAllocationBoundedByLimits drives every file tool (files/tools,
// files/fileio, files/tree on one runtime) with sizes at and past its
// bounds, and checks that the process's peak live heap stays within a
// small multiple of the largest configured bound, and that the runtime
// answers the next call. A buffer sized from input before a bound is
// checked (a replace_all of a 1 MB file with 30,000 bytes sized 30 GB)
// fails it, or kills the test process.
func TestAllocationBoundedByLimits(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a few hundred MiB")
	}
	b := kernel.NewBuilder(nil)
	for _, err := range []error{tools.RegisterTools(b, &tools.ToolOptions{Events: policy.NewEvents()}), fileio.RegisterTools(b, nil), tree.RegisterTools(b, nil)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	root := testkit.TempDir(t)
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a", strings.Repeat("a", 1_000_000))
	write("small", strings.Repeat("a", 2048))
	write("wide", strings.Repeat(strings.Repeat("w", 5000)+"\n", 4000))
	f, _ := os.Create(filepath.Join(root, "huge.log"))
	f.WriteString(strings.Repeat("log line\n", 100))
	f.Truncate(3 * limits.GiB / 2)
	f.Close()
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root},
		capability.ReadFile, capability.WriteFile, capability.EditFile, capability.MoveFile, capability.List, capability.Search, capability.ToolSearch))
	type call struct {
		tool string
		args map[string]any
	}
	big := strings.Repeat("b", limits.EditMaxFileBytes)
	calls := []call{
		{"read_file", map[string]any{"path": "a"}},
		{"edit_file", map[string]any{"path": "a", "old_string": "a", "new_string": strings.Repeat("b", 30_000), "replace_all": true}},
		{"read_file", map[string]any{"path": "small"}},
		{"edit_file", map[string]any{"path": "small", "old_string": "a", "new_string": big, "replace_all": true}},
		{"edit_file", map[string]any{"path": "small", "edits": []map[string]any{{"old_string": "a", "new_string": big[:limits.EditMaxFileBytes/2], "replace_all": true}}, "dry_run": true}},
		{"read_file", map[string]any{"path": "wide", "limit": limits.ReadMaxLines}},
		{"read_file", map[string]any{"path": "huge.log", "limit": 50}},
		{"read_file", map[string]any{"path": "huge.log", "tail": limits.ReadTailMaxLines}},
		{"read_files", map[string]any{"files": []map[string]any{{"path": "wide"}, {"path": "a"}, {"path": "huge.log"}}}},
		{"write_file", map[string]any{"path": "w", "content": big}},
		{"write_file", map[string]any{"path": "w2", "content": big + "x"}},
		{"list_dir", map[string]any{"details": true}},
		{"dir_tree", map[string]any{"max_depth": limits.DirTreeMaxDepth, "max_entries": limits.DirTreeMaxEntries}},
		{"file_info", map[string]any{"path": "huge.log"}},
		{"file_digest", map[string]any{"path": "huge.log"}},
		{"file_copy", map[string]any{"source": "huge.log", "destination": "copy/huge.log"}},
		{"tree_list", map[string]any{"path": "."}},
		{"glob", map[string]any{"pattern": "**/*"}},
		{"grep", map[string]any{"pattern": "log line"}},
	}
	runtime.GC()
	base := uint64(0)
	{
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		metrics.Read(sample)
		base = sample[0].Value.Uint64()
	}
	// The arguments are encoded and validated by the test and the kernel:
	// a few copies of the largest input, plus the tools' own buffers.
	bound := base + 12*uint64(limits.WriteMaxBytes)
	for _, c := range calls {
		stop := peakHeap()
		_, err := testkit.Call(t, s, c.tool, c.args)
		peak := stop()
		code := fault.CodeOf(err)
		if code != "" && code != fault.Limit && code != fault.InvalidInput {
			t.Errorf("%s: %v", c.tool, err)
		}
		if peak > bound {
			t.Errorf("%s (%s): peak heap %d MiB, over %d MiB", c.tool, code, peak>>20, bound>>20)
		}
		runtime.GC()
		// The next call is answered.
		if _, err := s.Call(context.Background(), "file_info", []byte(`{"path":"small"}`)); err != nil {
			t.Fatalf("after %s: %v", c.tool, err)
		}
	}
}
