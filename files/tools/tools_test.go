package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	root := testkit.TempDir(t)
	long := strings.Repeat("é", limits.ReadMaxLineRunes)
	files := map[string]string{
		"three.txt":   "one\ntwo\nthree\n",
		"noeol.txt":   "one\ntwo",
		"empty.txt":   "",
		"crlf.txt":    "one\r\ntwo\r\n",
		"many.txt":    numbered(2500),
		"long.txt":    "short\n" + long + "\n" + long + "x\n" + strings.Repeat("y", 100_000),
		"bad.txt":     "good\nbad \xff here\n",
		"badlate.txt": "ok\n" + strings.Repeat("a", 70_000) + "\xfe\n",
		"nl.txt":      "\n\n",
	}
	for name, content := range files {
		writeFile(t, filepath.Join(root, name), content)
	}
	rt := newRuntime(t, nil)
	s := newSession(t, rt, allEffects, root)
	cases := []struct {
		name   string
		args   obj
		code   fault.Code
		want   []string // substrings of the text
		absent []string
		start  int
		end    int
		total  int
	}{
		{name: "whole", args: obj{"path": "three.txt"}, want: []string{"     1\tone\n     2\ttwo\n     3\tthree\n", "(lines 1–3 of 3)"}, start: 1, end: 3, total: 3},
		{name: "absolute", args: obj{"path": filepath.Join(root, "three.txt")}, want: []string{"     3\tthree"}, start: 1, end: 3, total: 3},
		{name: "no final newline", args: obj{"path": "noeol.txt"}, want: []string{"     2\ttwo\n(lines 1–2 of 2)"}, start: 1, end: 2, total: 2},
		{name: "empty", args: obj{"path": "empty.txt"}, want: []string{"empty file: 0 lines"}, total: 0},
		{name: "only newlines", args: obj{"path": "nl.txt"}, want: []string{"     1\t\n     2\t\n(lines 1–2 of 2)"}, start: 1, end: 2, total: 2},
		{name: "offset", args: obj{"path": "three.txt", "offset": 2, "limit": 1}, want: []string{"     2\ttwo\n(lines 2–2 of 3; continue with offset=3)"}, absent: []string{"one", "three"}, start: 2, end: 2, total: 3},
		{name: "offset at last line", args: obj{"path": "three.txt", "offset": 3}, want: []string{"     3\tthree"}, start: 3, end: 3, total: 3},
		{name: "offset past end", args: obj{"path": "three.txt", "offset": 4}, code: fault.InvalidInput},
		{name: "negative", args: obj{"path": "three.txt", "offset": -1}, code: fault.InvalidInput},
		{name: "default window", args: obj{"path": "many.txt"}, want: []string{"  2000\tline 2000\n(lines 1–2000 of 2500; continue with offset=2001)"}, absent: []string{"line 2001"}, start: 1, end: 2000, total: 2500},
		{name: "window at end", args: obj{"path": "many.txt", "offset": 2001}, want: []string{"  2500\tline 2500\n(lines 2001–2500 of 2500)"}, start: 2001, end: 2500, total: 2500},
		{name: "crlf", args: obj{"path": "crlf.txt"}, want: []string{"     1\tone\n     2\ttwo\n", "CRLF"}, absent: []string{"\r"}, start: 1, end: 2, total: 2},
		{name: "long lines", args: obj{"path": "long.txt"}, want: []string{"\t" + long + "\n", "\t" + long + " … [cut: 1 more bytes]", "[cut: 98000 more bytes]", "2 lines longer than 2000 characters were cut"}, start: 1, end: 4, total: 4},
		{name: "invalid utf-8", args: obj{"path": "bad.txt"}, code: fault.InvalidInput, want: []string{"offset 9 (line 2)"}},
		{name: "invalid utf-8 outside window", args: obj{"path": "badlate.txt", "limit": 1}, start: 1, end: 1, total: 2},
		{name: "invalid utf-8 after the cut is not shown", args: obj{"path": "badlate.txt", "offset": 2}, want: []string{"[cut: 68001 more bytes]"}, start: 2, end: 2, total: 2},
		{name: "limit at bound", args: obj{"path": "three.txt", "limit": limits.ReadMaxLines}, start: 1, end: 3, total: 3},
		{name: "limit past bound", args: obj{"path": "three.txt", "limit": limits.ReadMaxLines + 1}, code: fault.Limit},
		{name: "missing", args: obj{"path": "nope.txt"}, code: fault.NotFound},
		{name: "directory", args: obj{"path": "."}, code: fault.InvalidInput},
		{name: "unknown argument", args: obj{"path": "three.txt", "lines": 3}, code: fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, ReadFile, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			text := ""
			if err != nil {
				text = err.Error()
			} else {
				text = res.Text
				var out ReadResult
				if err := json.Unmarshal(res.Structured, &out); err != nil {
					t.Fatal(err)
				}
				if out.StartLine != c.start || out.EndLine != c.end || out.TotalLines != c.total {
					t.Fatalf("window %d–%d of %d, want %d–%d of %d", out.StartLine, out.EndLine, out.TotalLines, c.start, c.end, c.total)
				}
				if strings.Contains(string(res.Structured), "line 1") {
					t.Fatal("file content in the structured result")
				}
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Fatalf("text lacks %q:\n%.600s", w, text)
				}
			}
			for _, a := range c.absent {
				if strings.Contains(text, a) {
					t.Fatalf("text has %q:\n%.600s", a, text)
				}
			}
		})
	}
}

// TestReadInvalidUTF8Offset: the offset named is the file offset, also
// when the bad byte is in a later read chunk.
func TestReadInvalidUTF8Offset(t *testing.T) {
	root := testkit.TempDir(t)
	content := strings.Repeat("a", 70_000) + "\nab\xfe\n"
	writeFile(t, filepath.Join(root, "f"), content)
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{ReadFile: {MaxOutputBytes: 1 << 20}})
	s := newSession(t, rt, allEffects, root)
	err := wantCode(t, s, ReadFile, obj{"path": "f", "offset": 2}, fault.InvalidInput)
	want := fmt.Sprintf("offset %d (line 2)", strings.Index(content, "\xfe"))
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("%v lacks %q", err, want)
	}
}

func TestWriteFile(t *testing.T) {
	root, ro := testkit.TempDir(t), testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "existing.txt"), "old\n")
	writeFile(t, filepath.Join(ro, "r.txt"), "read-only\n")
	rt := newRuntime(t, nil)
	writable, _ := capability.New("model", allEffects, capability.Scope{Roots: []string{root}})
	readOnly, _ := capability.New("model", []capability.Effect{capability.ReadFile, capability.List, capability.Search}, capability.Scope{Roots: []string{ro}})
	s, err := rt.NewSession("model", []capability.Capability{writable, readOnly}, nil)
	if err != nil {
		t.Fatal(err)
	}
	max := strings.Repeat("x", limits.WriteMaxBytes)
	steps := []struct {
		name string
		tool string
		args obj
		code fault.Code
	}{
		{"create", WriteFile, obj{"path": "new.txt", "content": "hello"}, ""},
		{"create with parents", WriteFile, obj{"path": "a/b/c.txt", "content": "deep"}, ""},
		{"overwrite own write", WriteFile, obj{"path": "new.txt", "content": "again"}, ""},
		{"overwrite unread", WriteFile, obj{"path": "existing.txt", "content": "clobber"}, fault.Conflict},
		{"read it", ReadFile, obj{"path": "existing.txt"}, ""},
		{"overwrite read", WriteFile, obj{"path": "existing.txt", "content": "replaced"}, ""},
		{"under read-only root", WriteFile, obj{"path": filepath.Join(ro, "r.txt"), "content": "x"}, fault.Denied},
		{"new file under read-only root", WriteFile, obj{"path": filepath.Join(ro, "n.txt"), "content": "x"}, fault.Denied},
		{"read-only root is readable", ReadFile, obj{"path": filepath.Join(ro, "r.txt")}, ""},
		{"edit under read-only root", EditFile, obj{"path": filepath.Join(ro, "r.txt"), "old_string": "read", "new_string": "write"}, fault.Denied},
		{"move under read-only root", MoveFile, obj{"source": filepath.Join(ro, "r.txt"), "destination": filepath.Join(ro, "s.txt")}, fault.Denied},
		{"move out of read-only root", MoveFile, obj{"source": filepath.Join(ro, "r.txt"), "destination": "stolen.txt"}, fault.Denied},
		{"root itself", WriteFile, obj{"path": ".", "content": "x"}, fault.InvalidInput},
		{"directory", WriteFile, obj{"path": "a", "content": "x"}, fault.InvalidInput},
		{"content at bound", WriteFile, obj{"path": "max.txt", "content": max}, ""},
		{"content past bound", WriteFile, obj{"path": "max2.txt", "content": max + "x"}, fault.Limit},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			_, err := testkit.Call(t, s, st.tool, st.args)
			if got := fault.CodeOf(err); got != st.code {
				t.Fatalf("code %q (%v), want %q", got, err, st.code)
			}
		})
	}
	for p, want := range map[string]string{
		filepath.Join(root, "new.txt"):      "again",
		filepath.Join(root, "a/b/c.txt"):    "deep",
		filepath.Join(root, "existing.txt"): "replaced",
		filepath.Join(ro, "r.txt"):          "read-only\n",
	} {
		if got := readFile(t, p); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(root, "max2.txt")); !os.IsNotExist(err) {
		t.Error("file past the bound was written")
	}
}

func TestEditFile(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f.go"), "package a\n\nfunc one() {}\nfunc two() {}\n// two two\n")
	writeFile(t, filepath.Join(root, "crlf.txt"), "alpha\r\nbeta\r\ngamma\r\n")
	writeFile(t, filepath.Join(root, "unread.txt"), "x\n")
	rt := newRuntime(t, nil)
	s := newSession(t, rt, allEffects, root)
	mustCall(t, s, ReadFile, obj{"path": "f.go"})
	mustCall(t, s, ReadFile, obj{"path": "crlf.txt"})
	steps := []struct {
		name string
		args obj
		code fault.Code
		want string // in the text or error
	}{
		{"unread", obj{"path": "unread.txt", "old_string": "x", "new_string": "y"}, fault.Conflict, "has not read"},
		{"missing", obj{"path": "nope.txt", "old_string": "x", "new_string": "y"}, fault.NotFound, ""},
		{"identical", obj{"path": "f.go", "old_string": "one", "new_string": "one"}, fault.InvalidInput, "identical"},
		{"empty old", obj{"path": "f.go", "old_string": "", "new_string": "x"}, fault.InvalidInput, "empty"},
		{"not found", obj{"path": "f.go", "old_string": "three", "new_string": "3"}, fault.InvalidInput, "not found"},
		{"ambiguous", obj{"path": "f.go", "old_string": "two", "new_string": "2"}, fault.InvalidInput, "occurs 3 times"},
		{"unique", obj{"path": "f.go", "old_string": "func one() {}", "new_string": "func one() { return }"}, "", "-func one() {}\n+func one() { return }"},
		{"consecutive edit needs no re-read", obj{"path": "f.go", "old_string": "func two() {}", "new_string": "func two() {\n}"}, "", "+func two() {\n+}"},
		{"replace all", obj{"path": "f.go", "old_string": "two", "new_string": "deux", "replace_all": true}, "", "3 replacements"},
		{"crlf multi-line", obj{"path": "crlf.txt", "old_string": "alpha\nbeta\n", "new_string": "ALPHA\nBETA\nNEW\n"}, "", "+NEW"},
		{"crlf identical after adaptation", obj{"path": "crlf.txt", "old_string": "gamma\r\n", "new_string": "gamma\n"}, fault.InvalidInput, "identical"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, EditFile, st.args)
			if got := fault.CodeOf(err); got != st.code {
				t.Fatalf("code %q (%v), want %q", got, err, st.code)
			}
			text := ""
			if err != nil {
				text = err.Error()
			} else {
				text = res.Text
			}
			if !strings.Contains(text, st.want) {
				t.Fatalf("%q lacks %q", text, st.want)
			}
		})
	}
	if got := readFile(t, filepath.Join(root, "f.go")); got != "package a\n\nfunc one() { return }\nfunc deux() {\n}\n// deux deux\n" {
		t.Fatalf("f.go = %q", got)
	}
	if got := readFile(t, filepath.Join(root, "crlf.txt")); got != "ALPHA\r\nBETA\r\nNEW\r\ngamma\r\n" {
		t.Fatalf("crlf.txt = %q", got)
	}
	// An outside change after the read: conflict, file untouched.
	writeFile(t, filepath.Join(root, "f.go"), "changed outside\n")
	wantCode(t, s, EditFile, obj{"path": "f.go", "old_string": "changed", "new_string": "x"}, fault.Conflict)
	if got := readFile(t, filepath.Join(root, "f.go")); got != "changed outside\n" {
		t.Fatalf("conflicting edit wrote: %q", got)
	}
	// Another session has its own observations.
	other := newSession(t, rt, allEffects, root)
	wantCode(t, other, EditFile, obj{"path": "crlf.txt", "old_string": "NEW", "new_string": "x"}, fault.Conflict)
}

func TestEditFileSizeBound(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "at.txt"), strings.Repeat("a", limits.EditMaxFileBytes-1)+"b")
	writeFile(t, filepath.Join(root, "past.txt"), strings.Repeat("a", limits.EditMaxFileBytes)+"b")
	rt := newRuntime(t, &ToolOptions{DisableGate: true})
	s := newSession(t, rt, allEffects, root)
	mustCall(t, s, EditFile, obj{"path": "at.txt", "old_string": "b", "new_string": "c"})
	wantCode(t, s, EditFile, obj{"path": "past.txt", "old_string": "b", "new_string": "c"}, fault.Limit)
	wantCode(t, s, EditFile, obj{"path": "at.txt", "old_string": "c", "new_string": "cd"}, fault.Limit)
}

func TestDisableGate(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f"), "abc")
	s := newSession(t, newRuntime(t, &ToolOptions{DisableGate: true}), allEffects, root)
	mustCall(t, s, EditFile, obj{"path": "f", "old_string": "b", "new_string": "B"})
	mustCall(t, s, WriteFile, obj{"path": "f", "content": "overwritten unread"})
	if got := readFile(t, filepath.Join(root, "f")); got != "overwritten unread" {
		t.Fatal(got)
	}
}

func TestListDir(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "b.txt"), "12345")
	writeFile(t, filepath.Join(root, "d", "x"), "")
	os.Symlink("b.txt", filepath.Join(root, "l"))
	many := filepath.Join(root, "many")
	for i := range limits.ListMaxEntries + 1 {
		writeFile(t, filepath.Join(many, fmt.Sprintf("f%04d", i)), "")
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	if err := syscall.Mkfifo(filepath.Join(root, "p"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := mustCall(t, s, ListDir, obj{})
	for _, w := range []string{"b.txt\n", "d/\n", "l@\n", "many/\n", "p  (special file)\n", "(5 entries in .)"} {
		if !strings.Contains(text, w) {
			t.Fatalf("%q lacks %q", text, w)
		}
	}
	res, err := testkit.Call(t, s, ListDir, obj{"path": "many"})
	if err != nil {
		t.Fatal(err)
	}
	var out ListResult
	json.Unmarshal(res.Structured, &out)
	if out.Shown != limits.ListMaxEntries || out.NotShown != 1 || !strings.Contains(res.Text, "1 not shown") {
		t.Fatalf("bound: %+v", out)
	}
	os.Remove(filepath.Join(many, "f0000"))
	json.Unmarshal(mustResult(t, s, ListDir, obj{"path": "many"}).Structured, &out)
	if out.Shown != limits.ListMaxEntries || out.NotShown != 0 {
		t.Fatalf("at the bound: %+v", out)
	}
	wantCode(t, s, ListDir, obj{"path": "b.txt"}, fault.InvalidInput)
	wantCode(t, s, ListDir, obj{"path": "nope"}, fault.NotFound)
	// With details, the permission string starts with the entry's type,
	// as ls and file_info show it.
	os.Chmod(filepath.Join(root, "d"), 0o750)
	text = mustCall(t, s, ListDir, obj{"details": true})
	for _, w := range []string{"b.txt  file, 5 bytes, -rw-", "d/  directory, ", " bytes, drwxr-x--- (750), modified ", "l@  symlink, 5 bytes, lrwx", "p  fifo, 0 bytes, prw------- (600)"} {
		if !strings.Contains(text, w) {
			t.Fatalf("details %q lack %q", text, w)
		}
	}
	if info := mustCall(t, s, FileInfo, obj{"path": "d"}); !strings.Contains(info, "d: directory, ") || !strings.Contains(info, "drwxr-x--- (750)") {
		t.Fatalf("file_info %q", info)
	}
}

func mustResult(t *testing.T, s *kernel.Session, tool string, args any) *kernel.Result {
	t.Helper()
	res, err := testkit.Call(t, s, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestGlob(t *testing.T) {
	root := testkit.TempDir(t)
	for _, p := range []string{"a.go", "a_test.go", "src/b.go", "src/deep/c.go", "src/deep/c.txt", ".git/x.go", "vendor/v.go"} {
		writeFile(t, filepath.Join(root, p), "")
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		args obj
		want []string
		code fault.Code
	}{
		{args: obj{"pattern": "*.go"}, want: []string{"a.go", "a_test.go"}},
		{args: obj{"pattern": "**/*.go"}, want: []string{"a.go", "a_test.go", "src/b.go", "src/deep/c.go", "vendor/v.go"}},
		{args: obj{"pattern": "src/**/*.go"}, want: []string{"src/b.go", "src/deep/c.go"}},
		{args: obj{"pattern": "*.go", "path": "src"}, want: []string{"src/b.go"}},
		{args: obj{"pattern": "**/c.{go,txt}"}, want: []string{"src/deep/c.go", "src/deep/c.txt"}},
		{args: obj{"pattern": "*_test.go"}, want: []string{"a_test.go"}},
		{args: obj{"pattern": "nomatch*"}, want: nil},
		{args: obj{"pattern": "[unclosed"}, code: fault.InvalidInput},
		{args: obj{"pattern": "/abs/*"}, code: fault.InvalidInput},
		{args: obj{"pattern": "../*"}, code: fault.Denied},
		{args: obj{"pattern": strings.Repeat("a", limits.GrepMaxPatternBytes+1)}, code: fault.Limit},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			c.args["sort"] = "path"
			res, err := testkit.Call(t, s, Glob, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err != nil {
				return
			}
			got := pathsOf(res.Text)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}

// pathsOf returns the lines of a result text before its summary line.
func pathsOf(text string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if l != "" && !strings.HasPrefix(l, "(") {
			out = append(out, l)
		}
	}
	return out
}

func TestGlobBound(t *testing.T) {
	root := testkit.TempDir(t)
	for i := range limits.GlobMaxResults + 2 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%04d.txt", i)), "")
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	var out GlobResult
	json.Unmarshal(mustResult(t, s, Glob, obj{"pattern": "*.txt"}).Structured, &out)
	if out.Shown != limits.GlobMaxResults || out.NotShown != 2 {
		t.Fatalf("%+v", out)
	}
	json.Unmarshal(mustResult(t, s, Glob, obj{"pattern": "f0*.txt"}).Structured, &out)
	if out.Shown != limits.GlobMaxResults || out.NotShown != 0 {
		t.Fatalf("at the bound: %+v", out)
	}
}

func TestGrep(t *testing.T) {
	root := testkit.TempDir(t)
	files := map[string]string{
		"a.go":              "package a\nfunc Hello() {}\nvar x = \"a.b\"\n",
		"b.txt":             "hello world\nHELLO again\naxb\n",
		"sub/c.go":          "// hello from sub\n",
		"ignored.log":       "hello ignored\n",
		"sub/local.tmp":     "hello tmp\n",
		"build/out.go":      "hello build\n",
		".git/config":       "hello git\n",
		"bin.dat":           "hello\x00binary",
		".gitignore":        "*.log\nbuild/\n",
		"sub/.gitignore":    "*.tmp\n",
		"keep/!important.x": "hello negated\n",
	}
	for p, c := range files {
		writeFile(t, filepath.Join(root, p), c)
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		name string
		args obj
		want []string
		code fault.Code
	}{
		{"regexp", obj{"pattern": "hel+o"}, []string{"b.txt:1:hello world", "keep/!important.x:1:hello negated", "sub/c.go:1:// hello from sub"}, ""},
		{"ignore case", obj{"pattern": "hello", "-i": true}, []string{"a.go:2:func Hello() {}", "b.txt:1:hello world", "b.txt:2:HELLO again", "keep/!important.x:1:hello negated", "sub/c.go:1:// hello from sub"}, ""},
		{"literal", obj{"pattern": "a.b", "literal": true}, []string{"a.go:3:var x = \"a.b\""}, ""},
		{"regexp dot", obj{"pattern": "a.b"}, []string{"a.go:3:var x = \"a.b\"", "b.txt:3:axb"}, ""},
		{"glob filter", obj{"pattern": "hello", "-i": true, "glob": "*.go"}, []string{"a.go:2:func Hello() {}", "sub/c.go:1:// hello from sub"}, ""},
		{"path", obj{"pattern": "hello", "path": "sub"}, []string{"sub/c.go:1:// hello from sub"}, ""},
		{"single file", obj{"pattern": "HELLO", "path": "b.txt"}, []string{"b.txt:2:HELLO again"}, ""},
		{"anchors per line", obj{"pattern": "^axb$"}, []string{"b.txt:3:axb"}, ""},
		{"bad regexp", obj{"pattern": "a("}, nil, fault.InvalidInput},
		{"empty", obj{"pattern": ""}, nil, fault.InvalidInput},
		{"head limit past bound", obj{"pattern": "x", "head_limit": limits.GrepMaxHeadLimit + 1}, nil, fault.Limit},
		{"pattern past bound", obj{"pattern": strings.Repeat("a", limits.GrepMaxPatternBytes+1)}, nil, fault.Limit},
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

func TestGrepBound(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f"), strings.Repeat("match\n", limits.GrepMaxMatches+3)+strings.Repeat("z", 2000)+"match\n")
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	res := mustResult(t, s, Grep, obj{"pattern": "match"})
	var out GrepResult
	json.Unmarshal(res.Structured, &out)
	if out.Shown != limits.GrepMaxMatches || out.NotShown != 4 || !strings.Contains(res.Text, "4 not shown") {
		t.Fatalf("%+v", out)
	}
	res = mustResult(t, s, Grep, obj{"pattern": "z+match", "head_limit": 1})
	if !strings.Contains(res.Text, " … [cut]") || strings.Count(res.Text, "z") != limits.GrepMaxLineRunes {
		t.Fatalf("long line not cut: %.100s", res.Text)
	}
}

func TestMoveFileIsDeferredAndNeverReplaces(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "a"), "A")
	writeFile(t, filepath.Join(root, "b"), "B")
	rt := newRuntime(t, nil)
	s := newSession(t, rt, allEffects, root)
	var listed []string
	for _, e := range s.Specs() {
		listed = append(listed, e.Name)
	}
	slices.Sort(listed)
	if want := []string{EditFile, Glob, Grep, ListDir, ListRoots, ReadFile, "tool_search", WriteFile}; !slices.Equal(listed, want) {
		t.Fatalf("hot tools %q, want %q", listed, want)
	}
	if !strings.Contains(mustCall(t, s, "tool_search", obj{"query": "move rename file"}), MoveFile) {
		t.Fatal("tool_search did not find move_file")
	}
	wantCode(t, s, MoveFile, obj{"source": "a", "destination": "b"}, fault.Conflict)
	mustCall(t, s, MoveFile, obj{"source": "a", "destination": "c/d"})
	wantCode(t, s, MoveFile, obj{"source": "c/d", "destination": "../x"}, fault.Denied)
	if readFile(t, filepath.Join(root, "b")) != "B" || readFile(t, filepath.Join(root, "c/d")) != "A" {
		t.Fatal("move replaced or lost content")
	}
	other := testkit.TempDir(t)
	c1, _ := capability.New("m", allEffects, capability.Scope{Roots: []string{root, other}})
	s2, _ := rt.NewSession("m", []capability.Capability{c1}, nil)
	wantCode(t, s2, MoveFile, obj{"source": "b", "destination": filepath.Join(other, "b")}, fault.InvalidInput)
}

func TestRegisterToolsOptions(t *testing.T) {
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{Grep: {MaxCalls: 1}})
	if p, _ := rt.Policy(Grep); p.MaxCalls != 1 {
		t.Fatalf("override not applied: %+v", p)
	}
	if p, _ := rt.Policy(ReadFile); p.MaxOutputBytes != limits.ToolTextBytes {
		t.Fatalf("default read policy: %+v", p)
	}
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f"), "x")
	s := newSession(t, rt, allEffects, root)
	mustCall(t, s, Grep, obj{"pattern": "x"})
	wantCode(t, s, Grep, obj{"pattern": "x"}, fault.Limit)
	// A session without the effect does not get the tool.
	ro := newSession(t, rt, []capability.Effect{capability.ReadFile}, root)
	wantCode(t, ro, WriteFile, obj{"path": "g", "content": ""}, fault.Denied)
}
