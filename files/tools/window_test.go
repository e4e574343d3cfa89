package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"image"
	"image/gif"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

func decode[T any](t *testing.T, res *kernel.Result) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(res.Structured, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sparse creates a file of size bytes that starts with head; the rest
// reads as NUL bytes.
func sparse(t *testing.T, p, head string, size int64) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(head)
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
}

// TestReadCostsTheWindow: a window of a file past
// limits.ReadVersionMaxBytes reads only as far as the window (the rest of
// this file is NUL bytes, which would be refused as binary had it been
// read) and says the size instead of a line count; a file of NUL bytes is
// refused as binary at its first chunk.
func TestReadCostsTheWindow(t *testing.T) {
	root := testkit.TempDir(t)
	head := numbered(100)
	sparse(t, filepath.Join(root, "log"), head, 3*limits.GiB/2)
	sparse(t, filepath.Join(root, "zeros"), "", 3*limits.GiB/2)
	sparse(t, filepath.Join(root, "small-zeros"), "text\n", limits.ReadVersionMaxBytes)
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	res := mustResult(t, s, ReadFile, obj{"path": "log", "limit": 50})
	out := decode[ReadResult](t, res)
	if out.StartLine != 1 || out.EndLine != 50 || out.TotalLines != 0 || out.NextOffset != 51 || out.Bytes != 3*limits.GiB/2 {
		t.Fatalf("%+v", out)
	}
	if !strings.Contains(res.Text, "(lines 1–50; the file is 1.5 GiB, more follows; continue with offset=51)") {
		t.Fatalf("footer: %q", res.Text[len(res.Text)-120:])
	}
	for _, p := range []string{"zeros", "small-zeros"} {
		err := wantCode(t, s, ReadFile, obj{"path": p}, fault.InvalidInput)
		if !strings.Contains(err.Error(), "is binary (a NUL byte at offset") {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// Reading into the NUL bytes refuses the file too.
	wantCode(t, s, ReadFile, obj{"path": "log", "offset": 90, "limit": 20}, fault.InvalidInput)
}

// TestReadVersionBound: at limits.ReadVersionMaxBytes a file is read to
// its end (its lines counted, so it may be edited after a partial read);
// one byte past, only the window.
func TestReadVersionBound(t *testing.T) {
	root := testkit.TempDir(t)
	line := strings.Repeat("x", 1023) + "\n"
	at := strings.Repeat(line, limits.ReadVersionMaxBytes/len(line))
	writeFile(t, filepath.Join(root, "at"), at)
	writeFile(t, filepath.Join(root, "past"), at+"y")
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	if out := decode[ReadResult](t, mustResult(t, s, ReadFile, obj{"path": "at", "limit": 1})); out.TotalLines != limits.ReadVersionMaxBytes/len(line) {
		t.Fatalf("at the bound: %+v", out)
	}
	mustCall(t, s, EditFile, obj{"path": "at", "old_string": "x\nx", "new_string": "x\nz", "replace_all": true})
	if out := decode[ReadResult](t, mustResult(t, s, ReadFile, obj{"path": "past", "limit": 1})); out.TotalLines != 0 || out.NextOffset != 2 {
		t.Fatalf("past the bound: %+v", out)
	}
}

// TestReadFitsTheOutputBound: a window that would exceed the output bound
// ends on the last whole line that fits and gives the next offset; one
// line that cannot fit is limit.
func TestReadFitsTheOutputBound(t *testing.T) {
	root := testkit.TempDir(t)
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "%04d %s\n", i+1, strings.Repeat("y", 1995))
	}
	writeFile(t, filepath.Join(root, "wide"), b.String())
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	res := mustResult(t, s, ReadFile, obj{"path": "wide"})
	out := decode[ReadResult](t, res)
	if int64(len(res.Text)+len(res.Structured)) > limits.ToolTextBytes || out.EndLine < 40 || out.NextOffset != out.EndLine+1 || out.TotalLines != 3000 {
		t.Fatalf("%d bytes, %+v", len(res.Text), out)
	}
	if !strings.Contains(res.Text, fmt.Sprintf("the window ends here to fit the output bound of %d bytes; continue with offset=%d", limits.ToolTextBytes, out.NextOffset)) {
		t.Fatalf("footer %q", res.Text[len(res.Text)-200:])
	}
	if !strings.HasSuffix(strings.SplitN(res.Text, "(lines", 2)[0], strings.Repeat("y", 1995)+"\n") {
		t.Fatal("the window does not end on a whole line")
	}
	next := decode[ReadResult](t, mustResult(t, s, ReadFile, obj{"path": "wide", "offset": out.NextOffset}))
	if next.StartLine != out.EndLine+1 {
		t.Fatalf("continued at %d", next.StartLine)
	}
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{ReadFile: {MaxOutputBytes: 2 * limits.KiB}})
	wantCode(t, newSession(t, rt, allEffects, root), ReadFile, obj{"path": "wide"}, fault.Limit)
	rt = newRuntimePolicies(t, nil, map[string]kernel.Policy{ReadFile: {MaxOutputBytes: 8 * limits.MiB}})
	if out := decode[ReadResult](t, mustResult(t, newSession(t, rt, allEffects, root), ReadFile, obj{"path": "wide"})); out.EndLine != limits.ReadDefaultLines {
		t.Fatalf("a raised bound: %+v", out)
	}
}

func TestReadTail(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f"), numbered(1000))
	writeFile(t, filepath.Join(root, "nonl"), "a\nb\nc")
	writeFile(t, filepath.Join(root, "empty"), "")
	sparse(t, filepath.Join(root, "big"), "", limits.ReadVersionMaxBytes+1)
	f, _ := os.OpenFile(filepath.Join(root, "big"), os.O_WRONLY, 0)
	f.WriteAt([]byte("\nfirst\nsecond\nthird\n"), limits.ReadVersionMaxBytes-19)
	f.Close()
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		name, path  string
		tail        int
		start, end  int
		total       int
		first, last string
	}{
		{"last 3", "f", 3, 998, 1000, 1000, "line 998", "line 1000"},
		{"more than there are", "f", 5000, 1, 1000, 1000, "line 1", "line 1000"},
		{"at the bound", "f", limits.ReadTailMaxLines, 1, 1000, 1000, "line 1", "line 1000"},
		{"no final newline", "nonl", 2, 2, 3, 3, "b", "c"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := mustResult(t, s, ReadFile, obj{"path": c.path, "tail": c.tail})
			out := decode[ReadResult](t, res)
			if out.StartLine != c.start || out.EndLine != c.end || out.TotalLines != c.total || out.NextOffset != 0 || out.UnnumberedLines != 0 {
				t.Fatalf("%+v\n%s", out, res.Text)
			}
			lines := strings.Split(res.Text, "\n")
			if !strings.HasSuffix(lines[0], "\t"+c.first) || !strings.HasSuffix(lines[len(lines)-3], "\t"+c.last) {
				t.Fatalf("text %q", res.Text)
			}
		})
	}
	// A file too large to count its lines: its last lines are shown
	// without numbers (they would not be line numbers), and the result
	// says so; no start or end line is claimed.
	res := mustResult(t, s, ReadFile, obj{"path": "big", "tail": 3})
	out := decode[ReadResult](t, res)
	if out.StartLine != 0 || out.EndLine != 0 || out.TotalLines != 0 || out.UnnumberedLines != 3 || out.NextOffset != 0 ||
		!strings.HasPrefix(res.Text, "first\nsecond\nthird\n(the last 3 lines of a file of ") ||
		!strings.Contains(res.Text, "too large to count its lines, so they are shown without line numbers") {
		t.Fatalf("uncounted: %+v\n%s", out, res.Text)
	}
	mustCall(t, s, ReadFile, obj{"path": "empty", "tail": 1})
	wantCode(t, s, ReadFile, obj{"path": "f", "tail": limits.ReadTailMaxLines + 1}, fault.Limit)
	wantCode(t, s, ReadFile, obj{"path": "f", "tail": 3, "offset": 2}, fault.InvalidInput)
	// A counted tail lets the file be edited.
	mustCall(t, s, EditFile, obj{"path": "nonl", "old_string": "c", "new_string": "C"})
}

func TestReadImages(t *testing.T) {
	root := testkit.TempDir(t)
	img := image.NewRGBA(image.Rect(0, 0, 4, 4))
	encoders := map[string]func(*bytes.Buffer) error{
		"image/png":  func(b *bytes.Buffer) error { return png.Encode(b, img) },
		"image/jpeg": func(b *bytes.Buffer) error { return jpeg.Encode(b, img, nil) },
		"image/gif":  func(b *bytes.Buffer) error { return gif.Encode(b, img, nil) },
		// A minimal RIFF/WEBP header is what sniffing reads.
		"image/webp": func(b *bytes.Buffer) error {
			_, err := b.WriteString("RIFF\x1a\x00\x00\x00WEBPVP8 \x0e\x00\x00\x00abcdefghijklmn")
			return err
		},
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	for mt, enc := range encoders {
		var b bytes.Buffer
		if err := enc(&b); err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(mt, "image/") + ".dat" // the name says nothing
		writeFile(t, filepath.Join(root, name), b.String())
		res := mustResult(t, s, ReadFile, obj{"path": name})
		if res.Image == nil || res.Image.MediaType != mt || !bytes.Equal(res.Image.Data, b.Bytes()) {
			t.Fatalf("%s: image %+v", mt, res.Image)
		}
		if out := decode[ReadResult](t, res); out.MediaType != mt {
			t.Fatalf("%s: %+v", mt, out)
		}
	}
	var at bytes.Buffer
	png.Encode(&at, img)
	pad := make([]byte, limits.ReadImageMaxBytes-at.Len())
	writeFile(t, filepath.Join(root, "at.png"), at.String()+string(pad))
	writeFile(t, filepath.Join(root, "past.png"), at.String()+string(pad)+"x")
	if res := mustResult(t, s, ReadFile, obj{"path": "at.png"}); len(res.Image.Data) != limits.ReadImageMaxBytes {
		t.Fatal("image at the bound")
	}
	wantCode(t, s, ReadFile, obj{"path": "past.png"}, fault.Limit)
	// Other binary content is refused, whatever its name.
	writeFile(t, filepath.Join(root, "x.png"), "\x00\x01\x02binary")
	if err := wantCode(t, s, ReadFile, obj{"path": "x.png"}, fault.InvalidInput); !strings.Contains(err.Error(), "binary") {
		t.Fatal(err)
	}
}

func TestListDirPaging(t *testing.T) {
	root := testkit.TempDir(t)
	for i := range 25 {
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%02d", 24-i)), strings.Repeat("z", i))
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	var names []string
	for offset := 0; ; {
		res := mustResult(t, s, ListDir, obj{"offset": offset, "limit": 10})
		out := decode[ListResult](t, res)
		lines := strings.Split(strings.TrimSpace(res.Text), "\n")
		names = append(names, lines[:len(lines)-1]...)
		if out.NextOffset == 0 {
			break
		}
		if out.Shown != 10 || out.NextOffset != offset+10 {
			t.Fatalf("%+v", out)
		}
		offset = out.NextOffset
	}
	if len(names) != 25 || names[0] != "f00" || names[24] != "f24" {
		t.Fatalf("paged names %v", names)
	}
	for i := 1; i < len(names); i++ {
		if names[i-1] >= names[i] {
			t.Fatalf("not in stable name order: %v", names)
		}
	}
	if out := decode[ListResult](t, mustResult(t, s, ListDir, obj{"offset": 25})); out.Shown != 0 || out.Total != 25 {
		t.Fatalf("past the end: %+v", out)
	}
	text := mustCall(t, s, ListDir, obj{"limit": 1, "details": true})
	if !strings.Contains(text, "f00  file, 24 bytes, -rw-r--r-- (644), modified ") {
		t.Fatalf("details: %q", text)
	}
	mustCall(t, s, ListDir, obj{"limit": limits.ListMaxEntries, "offset": limits.ListMaxOffset})
	wantCode(t, s, ListDir, obj{"limit": limits.ListMaxEntries + 1}, fault.Limit)
	wantCode(t, s, ListDir, obj{"offset": limits.ListMaxOffset + 1}, fault.Limit)
	wantCode(t, s, ListDir, obj{"offset": -1}, fault.InvalidInput)
}

// TestListDirFitsTheOutputBound: 1,000 long names exceed the default
// bound; the listing ends on a whole entry and gives the next offset.
func TestListDirFitsTheOutputBound(t *testing.T) {
	root := testkit.TempDir(t)
	for i := range limits.ListMaxEntries {
		writeFile(t, filepath.Join(root, fmt.Sprintf("%04d%s", i, strings.Repeat("n", 200))), "")
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	res := mustResult(t, s, ListDir, obj{})
	out := decode[ListResult](t, res)
	if out.Shown == 0 || out.Shown == limits.ListMaxEntries || out.NextOffset != out.Shown || !strings.Contains(res.Text, "to fit the output bound") {
		t.Fatalf("%+v", out)
	}
}

func TestEditMany(t *testing.T) {
	root := testkit.TempDir(t)
	const orig = "alpha\nbeta\ngamma\nbeta\n"
	writeFile(t, filepath.Join(root, "f"), orig)
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	mustCall(t, s, ReadFile, obj{"path": "f"})
	type e = map[string]any
	cases := []struct {
		name  string
		edits []e
		code  fault.Code
	}{
		{"second edit not found", []e{{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "delta", "new_string": "D"}}, fault.InvalidInput},
		{"second edit ambiguous", []e{{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "beta", "new_string": "B"}}, fault.InvalidInput},
		{"an empty old_string", []e{{"old_string": "alpha", "new_string": "A"}, {"old_string": "", "new_string": "x"}}, fault.InvalidInput},
		{"an edit of what an earlier edit removed", []e{{"old_string": "gamma", "new_string": "G"}, {"old_string": "gamma", "new_string": "g"}}, fault.InvalidInput},
		{"the result past the file bound", []e{{"old_string": "alpha", "new_string": strings.Repeat("a", limits.EditMaxFileBytes/2)}, {"old_string": "beta", "new_string": strings.Repeat("b", limits.EditMaxFileBytes/2), "replace_all": true}}, fault.Limit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			wantCode(t, s, EditFile, obj{"path": "f", "edits": c.edits}, c.code)
			if got := readFile(t, filepath.Join(root, "f")); got != orig {
				t.Fatalf("a failed multi-edit changed the file: %q", got)
			}
		})
	}
	many := make([]e, limits.EditMaxEdits+1)
	for i := range many {
		many[i] = e{"old_string": "x", "new_string": "y"}
	}
	wantCode(t, s, EditFile, obj{"path": "f", "edits": many}, fault.Limit)
	wantCode(t, s, EditFile, obj{"path": "f", "old_string": "alpha", "new_string": "A", "edits": []e{{"old_string": "beta", "new_string": "B"}}}, fault.InvalidInput)
	// A dry run shows the diff and writes nothing.
	edits := []e{{"old_string": "alpha", "new_string": "ALPHA"}, {"old_string": "beta", "new_string": "B", "replace_all": true}}
	res := mustResult(t, s, EditFile, obj{"path": "f", "edits": edits, "dry_run": true})
	if !strings.HasPrefix(res.Text, "dry run, nothing written: edited f: 3 replacements") || !strings.Contains(res.Text, "-alpha\n+ALPHA\n") || !strings.Contains(res.Text, "+B\n") {
		t.Fatalf("dry run diff %q", res.Text)
	}
	if out := decode[EditResult](t, res); !out.DryRun || out.Replacements != 3 {
		t.Fatalf("%+v", out)
	}
	if got := readFile(t, filepath.Join(root, "f")); got != orig {
		t.Fatalf("a dry run wrote: %q", got)
	}
	mustCall(t, s, EditFile, obj{"path": "f", "edits": edits})
	if got := readFile(t, filepath.Join(root, "f")); got != "ALPHA\nB\ngamma\nB\n" {
		t.Fatalf("multi-edit: %q", got)
	}
	// At the bound of edits.
	var content, want strings.Builder
	for i := range limits.EditMaxEdits {
		fmt.Fprintf(&content, "<%d>", i)
		fmt.Fprintf(&want, "[%d]", i)
		many[i] = e{"old_string": fmt.Sprintf("<%d>", i), "new_string": fmt.Sprintf("[%d]", i)}
	}
	writeFile(t, filepath.Join(root, "g"), content.String())
	mustCall(t, s, ReadFile, obj{"path": "g"})
	mustCall(t, s, EditFile, obj{"path": "g", "edits": many[:limits.EditMaxEdits]})
	if got := readFile(t, filepath.Join(root, "g")); got != want.String() {
		t.Fatalf("%d edits: %q", limits.EditMaxEdits, got)
	}
}

func TestReadFiles(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "a"), numbered(10))
	writeFile(t, filepath.Join(root, "b"), numbered(5000))
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	res := mustResult(t, s, ReadFiles, obj{"files": []obj{{"path": "a", "offset": 3, "limit": 2}, {"path": "missing"}, {"path": "b", "tail": 2}, {"path": "b"}}})
	out := decode[ReadFilesResult](t, res)
	if len(out.Files) != 4 || out.Failed != 1 || out.Files[0].StartLine != 3 || out.Files[0].EndLine != 4 ||
		out.Files[1].Code != fault.NotFound || out.Files[2].StartLine != 4999 || out.Files[3].NextOffset == 0 {
		t.Fatalf("%+v", out)
	}
	if int64(len(res.Text)) > limits.ToolTextBytes || !strings.Contains(res.Text, "==> missing <==\nnot_found: ") {
		t.Fatalf("%d bytes: %.300q", len(res.Text), res.Text)
	}
	paths := make([]obj, limits.ReadFilesMaxPaths+1)
	for i := range paths {
		paths[i] = obj{"path": "a"}
	}
	mustCall(t, s, ReadFiles, obj{"files": paths[:limits.ReadFilesMaxPaths]})
	wantCode(t, s, ReadFiles, obj{"files": paths}, fault.Limit)
	wantCode(t, s, ReadFiles, obj{"files": []obj{}}, fault.InvalidInput)
	small := newRuntimePolicies(t, nil, map[string]kernel.Policy{ReadFiles: {MaxOutputBytes: 8 * limits.KiB}})
	wantCode(t, newSession(t, small, allEffects, root), ReadFiles, obj{"files": paths[:limits.ReadFilesMaxPaths]}, fault.Limit)
	// Each file read counts as a read for edit_file.
	mustCall(t, s, EditFile, obj{"path": "a", "old_string": "line 10\n", "new_string": "line ten\n"})
}

func TestDirTree(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "a", "b", "c", "d.txt"), "")
	writeFile(t, filepath.Join(root, "a", "x.txt"), "")
	writeFile(t, filepath.Join(root, ".git", "HEAD"), "")
	writeFile(t, filepath.Join(root, "z.txt"), "")
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		name       string
		args       obj
		shown      int
		unexpanded int
		cut        bool
		code       fault.Code
	}{
		{"default depth", obj{}, 6, 1, false, ""},
		{"depth 1", obj{"max_depth": 1}, 3, 1, false, ""},
		{"deep enough", obj{"max_depth": 4}, 7, 0, false, ""},
		{"entries at the count", obj{"max_entries": 6}, 6, 1, false, ""},
		{"entries one short", obj{"max_entries": 5}, 5, 1, true, ""},
		{"depth at the bound", obj{"max_depth": limits.DirTreeMaxDepth}, 7, 0, false, ""},
		{"depth past the bound", obj{"max_depth": limits.DirTreeMaxDepth + 1}, 0, 0, false, fault.Limit},
		{"entries past the bound", obj{"max_entries": limits.DirTreeMaxEntries + 1}, 0, 0, false, fault.Limit},
		{"a file", obj{"path": "z.txt"}, 0, 0, false, fault.InvalidInput},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := testkit.Call(t, s, DirTree, c.args)
			if fault.CodeOf(err) != c.code {
				t.Fatalf("%v, want %q", err, c.code)
			}
			if err != nil {
				return
			}
			out := decode[TreeResult](t, res)
			if out.Shown != c.shown || out.Unexpanded != c.unexpanded || out.Cut != c.cut {
				t.Fatalf("%+v\n%s", out, res.Text)
			}
		})
	}
	if text := mustCall(t, s, DirTree, obj{}); !strings.Contains(text, "./\n  .git/\n  a/\n    b/\n      c/\n    x.txt\n  z.txt\n") || strings.Contains(text, "HEAD") {
		t.Fatalf("tree %q", text)
	}
}

func TestFileInfoAndCreateDirectory(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f"), "12345")
	os.Chmod(filepath.Join(root, "f"), 0o640)
	os.Symlink("f", filepath.Join(root, "l"))
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	out := decode[InfoResult](t, mustResult(t, s, FileInfo, obj{"path": "f"}))
	if out.Type != "file" || out.Size != 5 || out.Mode != "0640" || out.ModTime == "" {
		t.Fatalf("%+v", out)
	}
	if out := decode[InfoResult](t, mustResult(t, s, FileInfo, obj{"path": "l"})); out.Type != "symlink" {
		t.Fatalf("%+v", out)
	}
	if out := decode[InfoResult](t, mustResult(t, s, FileInfo, obj{"path": "."})); out.Type != "directory" {
		t.Fatalf("%+v", out)
	}
	wantCode(t, s, FileInfo, obj{"path": "nope"}, fault.NotFound)
	wantCode(t, s, FileInfo, obj{"path": "../x"}, fault.Denied)

	if out := decode[MkdirResult](t, mustResult(t, s, MakeDir, obj{"path": "n/e/w"})); !out.Created {
		t.Fatalf("%+v", out)
	}
	if fi, err := os.Stat(filepath.Join(root, "n", "e", "w")); err != nil || !fi.IsDir() {
		t.Fatal(err)
	}
	if out := decode[MkdirResult](t, mustResult(t, s, MakeDir, obj{"path": "n/e/w"})); out.Created {
		t.Fatalf("existing: %+v", out)
	}
	wantCode(t, s, MakeDir, obj{"path": "f"}, fault.InvalidInput)
	wantCode(t, s, MakeDir, obj{"path": "f/sub"}, fault.NotFound)
	wantCode(t, s, MakeDir, obj{"path": "../out"}, fault.Denied)
	wantCode(t, s, MakeDir, obj{"path": "l/sub"}, fault.NotFound)
}

// TestGrepSmallBound is the case: with [tool.grep]
// max_output_bytes = 2000 and 127 short matching lines in 3 files, the
// answer is a window of some of them whose next_offset moves on, not
// "127 not shown" with none shown and no next offset.
func TestGrepSmallBound(t *testing.T) {
	root := testkit.TempDir(t)
	for f, n := range []int{40, 43, 44} {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "TODO item %d\n", i)
		}
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%d.txt", f)), b.String())
	}
	rt := newRuntimePolicies(t, nil, map[string]kernel.Policy{Grep: {MaxOutputBytes: 2000}})
	s := newSession(t, rt, allEffects, root)
	res := mustResult(t, s, Grep, obj{"pattern": "TODO"})
	out := decode[GrepResult](t, res)
	if out.Total != 127 || out.Shown == 0 || out.NextOffset != out.Shown || res.Size() > 2000 ||
		!strings.Contains(res.Text, fmt.Sprintf("the next page is offset=%d", out.NextOffset)) {
		t.Fatalf("%+v\n%s", out, res.Text)
	}
}

// TestFileWindowBounds holds every windowing file tool to the shared
// edge at small output bounds (testkit.WindowBounds).
func TestFileWindowBounds(t *testing.T) {
	root := testkit.TempDir(t)
	for f := range 3 {
		var b strings.Builder
		for i := range 40 {
			fmt.Fprintf(&b, "line %d of file %d: TODO %s\n", i, f, strings.Repeat("x", i%7))
		}
		writeFile(t, filepath.Join(root, fmt.Sprintf("f%d.txt", f)), b.String())
	}
	for i := range 30 {
		writeFile(t, filepath.Join(root, "dir", fmt.Sprintf("entry-%02d.txt", i)), "x\n")
	}
	session := func(max int64) *kernel.Session {
		return newSession(t, newRuntimePolicies(t, nil, map[string]kernel.Policy{
			Grep: {MaxOutputBytes: max}, ReadFile: {MaxOutputBytes: max}, ListDir: {MaxOutputBytes: max}, Glob: {MaxOutputBytes: max},
		}), allEffects, root)
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{Grep, obj{"pattern": "TODO"}},
		{Grep, obj{"pattern": "TODO", "offset": 50}},
		{Grep, obj{"pattern": "TODO x", "-C": 1}},
		{Grep, obj{"pattern": "^x$|TODO", "output_mode": "files_with_matches"}},
		{Grep, obj{"pattern": "^x$|TODO", "output_mode": "count"}},
		{ReadFile, obj{"path": "f1.txt"}},
		{ListDir, obj{"path": "dir"}},
		{Glob, obj{"pattern": "**/*.txt", "sort": "path"}},
	} {
		t.Run(fmt.Sprint(c.tool, c.args), func(t *testing.T) {
			testkit.WindowBounds(t, session, c.tool, c.args, "offset", "next_offset")
		})
	}
}
