package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/files/local"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// benchText is about size bytes of 80-column source-like lines.
func benchText(size int) string {
	var b strings.Builder
	b.Grow(size + 100)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "\tvalue%06d := compute(%06d) // a line of ordinary source text, eighty columns\n", i, i)
	}
	return b.String()
}

type benchEnv struct {
	s   *kernel.Session
	x   *executor
	req request
}

func newBenchEnv(b *testing.B, file, content string) *benchEnv {
	root := testkit.TempDir(b)
	writeFile(b, filepath.Join(root, file), content)
	big := kernel.Policy{MaxCalls: limits.HardMaxCalls}
	rt := newRuntimePolicies(b, nil, map[string]kernel.Policy{ReadFile: {MaxCalls: limits.HardMaxCalls, MaxOutputBytes: limits.FileToolsReadOutputBytes}, EditFile: big})
	s := newSession(b, rt, allEffects, root)
	ev := files.NewEvents()
	if err := policy.Attach(ev); err != nil {
		b.Fatal(err)
	}
	return &benchEnv{
		s:   s,
		x:   &executor{provider: local.New(), events: ev},
		req: request{session: s, caps: s.Capabilities(), maxOutput: limits.FileToolsReadOutputBytes},
	}
}

// BenchmarkReadFile4MiB reads all of a 4 MiB file (about 48,000 lines)
// through the kernel: validation, the handler, encoding, the output bound.
func BenchmarkReadFile4MiB(b *testing.B) {
	e := newBenchEnv(b, "big.go", benchText(4<<20))
	args := json.RawMessage(`{"path":"big.go","limit":100000}`)
	ctx := context.Background()
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.s.Call(ctx, ReadFile, args)
		if err != nil {
			b.Fatal(err)
		}
		res.Release() // as the transport does once it wrote the result
	}
}

// BenchmarkReadFile4MiBExecutor is the same read without the kernel.
func BenchmarkReadFile4MiBExecutor(b *testing.B) {
	e := newBenchEnv(b, "big.go", benchText(4<<20))
	ctx := context.Background()
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.x.readFile(ctx, e.req, ReadArgs{Path: "big.go", Limit: 100000})
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
}

// BenchmarkReadFileSmall reads a 100-line (4 KiB) file without the
// kernel: the small read of bench/mcp-vs-reference.sh.
func BenchmarkReadFileSmall(b *testing.B) {
	e := newBenchEnv(b, "small.go", benchText(4<<10))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := e.x.readFile(ctx, e.req, ReadArgs{Path: "small.go"})
		if err != nil {
			b.Fatal(err)
		}
		res.Release()
	}
}

// editText is 1 MiB with one marker in the middle that the benchmarks
// flip back and forth, so each iteration is a real, unique edit.
func editText() string {
	half := benchText(512 << 10)
	return half + "MARKER-A\n" + half
}

// BenchmarkEditFile1MiB edits a 1 MiB file through the kernel: read,
// files/policy check, match, atomic replace with fsync, diff.
func BenchmarkEditFile1MiB(b *testing.B) {
	e := newBenchEnv(b, "big.go", editText())
	ctx := context.Background()
	if _, err := e.s.Call(ctx, ReadFile, json.RawMessage(`{"path":"big.go","limit":1}`)); err != nil {
		b.Fatal(err)
	}
	flip := [2]json.RawMessage{
		json.RawMessage(`{"path":"big.go","old_string":"MARKER-A","new_string":"MARKER-B"}`),
		json.RawMessage(`{"path":"big.go","old_string":"MARKER-B","new_string":"MARKER-A"}`),
	}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.s.Call(ctx, EditFile, flip[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkEditFile1MiBExecutor is the same edit without the kernel.
func BenchmarkEditFile1MiBExecutor(b *testing.B) {
	e := newBenchEnv(b, "big.go", editText())
	ctx := context.Background()
	if _, err := e.x.readFile(ctx, e.req, ReadArgs{Path: "big.go", Limit: 1}); err != nil {
		b.Fatal(err)
	}
	flip := [2]EditArgs{
		{Path: "big.go", OldString: "MARKER-A", NewString: "MARKER-B"},
		{Path: "big.go", OldString: "MARKER-B", NewString: "MARKER-A"},
	}
	b.SetBytes(1 << 20)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := e.x.editFile(ctx, e.req, flip[i%2]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkReadFile4MiBNaive is a reference point, not capkit code: the
// common way to number a file's lines (read it whole, split, format each
// line with fmt), with none of the tool's checks.
func BenchmarkReadFile4MiBNaive(b *testing.B) {
	root := testkit.TempDir(b)
	p := filepath.Join(root, "big.go")
	writeFile(b, p, benchText(4<<20))
	b.SetBytes(4 << 20)
	b.ReportAllocs()
	for b.Loop() {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		var out strings.Builder
		for i, l := range strings.Split(string(data), "\n") {
			fmt.Fprintf(&out, "%6d\t%s\n", i+1, l)
		}
		_ = out.String()
	}
}

// benchTree makes files files of a few lines each, 100 per directory.
func benchTree(b *testing.B, files int) string {
	root := testkit.TempDir(b)
	for i := range files {
		writeFile(b, filepath.Join(root, fmt.Sprintf("d%02d", i/100), fmt.Sprintf("f%04d.go", i)),
			fmt.Sprintf("package p\n\nfunc F%d() int { return %d }\n// TODO: nothing\n", i, i))
	}
	return root
}

// BenchmarkGrep2000Files greps a tree of 2,000 small files through the
// kernel (walk, .gitignore lookups, read, RE2 search, 500 lines shown).
func BenchmarkGrep2000Files(b *testing.B) {
	root := benchTree(b, 2000)
	rt := newRuntimePolicies(b, nil, map[string]kernel.Policy{Grep: {MaxCalls: limits.HardMaxCalls}})
	s := newSession(b, rt, allEffects, root)
	args := json.RawMessage(`{"pattern":"func F\\d+"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, Grep, args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkListDir1000 lists a directory of 1,000 files through the
// kernel.
func BenchmarkListDir1000(b *testing.B) {
	root := testkit.TempDir(b)
	for i := range 1000 {
		writeFile(b, filepath.Join(root, fmt.Sprintf("f%04d.txt", i)), "x")
	}
	rt := newRuntimePolicies(b, nil, map[string]kernel.Policy{ListDir: {MaxCalls: limits.HardMaxCalls}})
	s := newSession(b, rt, allEffects, root)
	args := json.RawMessage(`{}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Call(ctx, ListDir, args); err != nil {
			b.Fatal(err)
		}
	}
}

// largeLog writes a text log of size bytes (sparse files are binary now,
// so the log is written out) once per benchmark binary run.
func largeLog(b *testing.B, size int64) (dir string) {
	root := testkit.TempDir(b)
	f, err := os.Create(filepath.Join(root, "big.log"))
	if err != nil {
		b.Fatal(err)
	}
	block := []byte(benchText(1 << 20))
	for n := int64(0); n < size; n += int64(len(block)) {
		if _, err := f.Write(block); err != nil {
			b.Fatal(err)
		}
	}
	f.Close()
	return root
}

// BenchmarkReadWindowOfLargeLog reads the first 50 lines and the last 50
// lines of a 256 MiB log: the cost is the window's, not the file's.
func BenchmarkReadWindowOfLargeLog(b *testing.B) {
	root := largeLog(b, 256<<20)
	rt := newRuntimePolicies(b, nil, map[string]kernel.Policy{ReadFile: {MaxCalls: limits.HardMaxCalls}})
	s := newSession(b, rt, allEffects, root)
	ctx := context.Background()
	for _, c := range []struct{ name, args string }{
		{"head50", `{"path":"big.log","limit":50}`},
		{"tail50", `{"path":"big.log","tail":50}`},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.Call(ctx, ReadFile, json.RawMessage(c.args))
				if err != nil {
					b.Fatal(err)
				}
				res.Release()
			}
		})
	}
}

// BenchmarkWriteFileSmall replaces a 1 KiB file the session wrote before
// (no read needed): resolution, the protected-path checks, the policy,
// and an atomic replace with fsync.
func BenchmarkWriteFileSmall(b *testing.B) {
	e := newBenchEnv(b, "sub/small.txt", "")
	ctx := context.Background()
	in := WriteArgs{Path: "sub/small.txt", Content: benchText(1 << 10)}
	if _, err := e.x.readFile(ctx, e.req, ReadArgs{Path: in.Path}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := e.x.writeFile(ctx, e.req, in); err != nil {
			b.Fatal(err)
		}
	}
}
