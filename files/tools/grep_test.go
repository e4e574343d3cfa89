package tools

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func TestGrepOptions(t *testing.T) {
	root := testkit.TempDir(t)
	for p, c := range map[string]string{
		"a.go":  "package a\nfunc Hello() {}\n// hello again\nvar x = 1\n",
		"b.py":  "def hello():\n    pass\n",
		"c.md":  "# Hello\n\ntext\nmore\nx\ny\nz\nhello end\n",
		"d.txt": "start\nmiddle\nend\n",
	} {
		writeFile(t, filepath.Join(root, p), c)
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		name string
		args obj
		want []string
		code fault.Code
	}{
		{"files mode", obj{"pattern": "hello", "-i": true, "output_mode": "files_with_matches"}, []string{"a.go", "b.py", "c.md"}, ""},
		{"count mode", obj{"pattern": "(?i)hello", "output_mode": "count"}, []string{"a.go:2", "b.py:1", "c.md:2"}, ""},
		{"content mode", obj{"pattern": "hello", "output_mode": "content", "type": "py"}, []string{"b.py:1:def hello():"}, ""},
		{"bad mode", obj{"pattern": "x", "output_mode": "lines"}, nil, fault.InvalidInput},
		{"type go", obj{"pattern": "hello", "-i": true, "type": "go"}, []string{"a.go:2:func Hello() {}", "a.go:3:// hello again"}, ""},
		{"type unknown", obj{"pattern": "x", "type": "cobol"}, nil, fault.InvalidInput},
		{"type and glob", obj{"pattern": "hello", "-i": true, "type": "md", "glob": "a*"}, nil, ""},
		{"after", obj{"pattern": "^# Hello", "-A": 1}, []string{"c.md:1:# Hello", "c.md-2-"}, ""},
		{"before", obj{"pattern": "more", "-B": 1}, []string{"c.md-3-text", "c.md:4:more"}, ""},
		{"context groups", obj{"pattern": "more|end", "-C": 1, "type": "md"}, []string{"c.md-3-text", "c.md:4:more", "c.md-5-x", "--", "c.md-7-z", "c.md:8:hello end"}, ""},
		{"context merges", obj{"pattern": "^[xz]$", "-C": 1}, []string{"c.md-4-more", "c.md:5:x", "c.md-6-y", "c.md:7:z", "c.md-8-hello end"}, ""},
		{"no literal, case-insensitive", obj{"pattern": `h[aeiou]llo\b`, "-i": true, "output_mode": "count"}, []string{"a.go:2", "b.py:1", "c.md:2"}, ""},
		{"too large for the DFA", obj{"pattern": `(?:\pN|h){1,120}ello`, "output_mode": "count"}, []string{"a.go:1", "b.py:1", "c.md:1"}, ""},
		{"-B wins over -C", obj{"pattern": "more", "-C": 2, "-B": 1, "-A": 0}, []string{"c.md-3-text", "c.md:4:more", "c.md-5-x", "c.md-6-y"}, ""},
		{"context at bound", obj{"pattern": "more", "-C": limits.GrepMaxContextLines, "type": "go"}, nil, ""},
		{"context past bound", obj{"pattern": "more", "-C": limits.GrepMaxContextLines + 1}, nil, fault.Limit},
		{"after past bound", obj{"pattern": "more", "-A": limits.GrepMaxContextLines + 1}, nil, fault.Limit},
		{"before negative", obj{"pattern": "more", "-B": -1}, nil, fault.InvalidInput},
		{"no line numbers", obj{"pattern": "Hello", "-n": false, "type": "go"}, []string{"a.go:func Hello() {}"}, ""},
		{"one line without multiline", obj{"pattern": `start\nmiddle`}, nil, ""},
		{"multiline", obj{"pattern": `start\nmiddle`, "multiline": true}, []string{"d.txt:1:start", "d.txt:2:middle"}, ""},
		{"multiline dot", obj{"pattern": `start.*end`, "multiline": true}, []string{"d.txt:1:start", "d.txt:2:middle", "d.txt:3:end"}, ""},
		{"multiline count", obj{"pattern": `e`, "multiline": true, "output_mode": "count", "type": "txt"}, []string{"d.txt:2"}, ""},
		{"head limit", obj{"pattern": "hello", "-i": true, "head_limit": 1}, []string{"a.go:2:func Hello() {}"}, ""},
		{"head limit at bound", obj{"pattern": "Hello", "head_limit": limits.GrepMaxHeadLimit, "type": "go"}, []string{"a.go:2:func Hello() {}"}, ""},
		{"head limit past bound", obj{"pattern": "x", "head_limit": limits.GrepMaxHeadLimit + 1}, nil, fault.Limit},
		{"offset", obj{"pattern": "hello", "-i": true, "offset": 3, "head_limit": 1}, []string{"c.md:1:# Hello"}, ""},
		{"offset at bound", obj{"pattern": "hello", "offset": limits.GrepMaxOffset}, nil, ""},
		{"offset past bound", obj{"pattern": "hello", "offset": limits.GrepMaxOffset + 1}, nil, fault.Limit},
		{"offset negative", obj{"pattern": "hello", "offset": -1}, nil, fault.InvalidInput},
		{"case folds k", obj{"pattern": "PACKAGE", "-i": true}, []string{"a.go:1:package a"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, Grep, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err != nil {
				return
			}
			if got := pathsOf(res.Text); !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q\n%s", got, c.want, res.Text)
			}
		})
	}
}

// TestGrepPaging: pages read with offset and head_limit, one after the
// other, make up the whole listing, in every mode and whatever the worker
// scheduling; the result names the next page's offset.
func TestGrepPaging(t *testing.T) {
	root := testkit.TempDir(t)
	for i := range 40 {
		var b strings.Builder
		for j := range i % 7 {
			fmt.Fprintf(&b, "match %d %d\nother\n", i, j)
		}
		writeFile(t, filepath.Join(root, fmt.Sprintf("d%d/f%02d.txt", i%3, i)), b.String())
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	for _, mode := range []string{"content", "files_with_matches", "count"} {
		whole := mustResult(t, s, Grep, obj{"pattern": "match", "output_mode": mode, "head_limit": limits.GrepMaxHeadLimit})
		want := pathsOf(whole.Text)
		var got []string
		offset := 0
		for page := 0; ; page++ {
			res := mustResult(t, s, Grep, obj{"pattern": "match", "output_mode": mode, "head_limit": 7, "offset": offset})
			var out GrepResult
			json.Unmarshal(res.Structured, &out)
			got = append(got, pathsOf(res.Text)...)
			if out.NextOffset == 0 {
				break
			}
			if out.NextOffset != offset+7 || !strings.Contains(res.Text, fmt.Sprintf("the next page is offset=%d", out.NextOffset)) {
				t.Fatalf("%s page %d: %+v\n%s", mode, page, out, res.Text)
			}
			offset = out.NextOffset
		}
		if !slices.Equal(got, want) || len(want) == 0 {
			t.Fatalf("%s: pages %q\nwhole %q", mode, got, want)
		}
	}
}

// TestGrepDeepPageOfBigFile: a page deep inside a file whose entries the
// first search did not keep (past limits.GrepKeepBytes) is found again.
func TestGrepDeepPageOfBigFile(t *testing.T) {
	root := testkit.TempDir(t)
	var b strings.Builder
	line := strings.Repeat("y", 400)
	for i := range 3000 {
		fmt.Fprintf(&b, "m%d %s\n", i+1, line)
	}
	if b.Len() < 2*limits.GrepKeepBytes {
		t.Fatal("fixture too small")
	}
	writeFile(t, filepath.Join(root, "a.txt"), "m0\n")
	writeFile(t, filepath.Join(root, "big.txt"), b.String())
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	res := mustResult(t, s, Grep, obj{"pattern": "^m", "offset": 2001, "head_limit": 3, "path": "."})
	got := pathsOf(res.Text)
	if len(got) != 3 || !strings.HasPrefix(got[0], "big.txt:2001:m2001 ") || !strings.HasPrefix(got[2], "big.txt:2003:m2003 ") {
		t.Fatalf("%.300q", got)
	}
}

// TestGrepBatchKeepBudget: the files of one worker's batch share
// limits.GrepKeepBytes of kept text; a page inside a file searched after
// the budget was spent is found again, with the right lines.
func TestGrepBatchKeepBudget(t *testing.T) {
	root := testkit.TempDir(t)
	line := strings.Repeat("y", 400)
	const files, lines = 6, 250
	if files*lines*len(line) < 2*limits.GrepKeepBytes || files > limits.GrepBatchFiles {
		t.Fatal("fixture does not spend the budget of one batch")
	}
	for f := range files {
		var b strings.Builder
		for i := range lines {
			fmt.Fprintf(&b, "m%d.%d %s\n", f, i+1, line)
		}
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%d.txt", f)), b.String())
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	for f := range files {
		res := mustResult(t, s, Grep, obj{"pattern": "^m", "offset": f*lines + 10, "head_limit": 2})
		got := pathsOf(res.Text)
		want0, want1 := fmt.Sprintf("f%d.txt:11:m%d.11 ", f, f), fmt.Sprintf("f%d.txt:12:m%d.12 ", f, f)
		if len(got) != 2 || !strings.HasPrefix(got[0], want0) || !strings.HasPrefix(got[1], want1) {
			t.Fatalf("file %d: %.200q", f, got)
		}
	}
}

// TestGrepOutputBound: a page stops at the call's output bound on a whole
// entry and says where the next page starts.
func TestGrepOutputBound(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f.txt"), strings.Repeat("match "+strings.Repeat("z", 90)+"\n", 400))
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{Grep: {MaxOutputBytes: 8 * limits.KiB}})
	s := newSession(t, rt, allEffects, root)
	res := mustResult(t, s, Grep, obj{"pattern": "match"})
	var out GrepResult
	json.Unmarshal(res.Structured, &out)
	if out.Shown == 0 || out.Shown >= 400 || out.NextOffset != out.Shown || out.Total != 400 || !strings.Contains(res.Text, "output bound") {
		t.Fatalf("%+v\n%s", out, res.Text)
	}
}

// TestGrepStreamsLargeFiles: a file several read buffers long is searched
// whole, with the right line numbers across buffer boundaries.
func TestGrepStreamsLargeFiles(t *testing.T) {
	root := testkit.TempDir(t)
	var b strings.Builder
	var want []string
	for i := 1; b.Len() < 3*limits.GrepChunkBytes+100; i++ {
		if i%9973 == 0 {
			fmt.Fprintf(&b, "needle %d\n", i)
			want = append(want, fmt.Sprintf("big.log:%d:needle %d", i, i))
			continue
		}
		fmt.Fprintf(&b, "line %d of filler text\n", i)
	}
	writeFile(t, filepath.Join(root, "big.log"), b.String())
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	if got := pathsOf(mustCall(t, s, Grep, obj{"pattern": "needle"})); !slices.Equal(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}
