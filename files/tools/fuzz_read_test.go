package tools

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/files/local"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// FuzzReadWindow checks read_file's windows (offset/limit and tail, under
// output bounds small enough to end windows early) against splitting the
// content into lines: every line shown is the content's line of that
// number, windows are contiguous, a window that stops early says where to
// go on, and binary or non-UTF-8 content is refused.
func FuzzReadWindow(f *testing.F) {
	f.Add([]byte("a\nb\nc\n"), 2, 1, 0, 4096)
	f.Add([]byte("a\r\nb\r\nc"), 0, 0, 2, 2048)
	f.Add([]byte(strings.Repeat("0123456789\n", 500)), 10, 300, 0, 2100)
	f.Add([]byte(strings.Repeat("x", 3000)+"\ny\n"), 0, 0, 5, 3000)
	f.Add([]byte("text\x00binary"), 0, 0, 0, 4096)
	f.Add([]byte("bad \xff utf8\n"), 0, 0, 1, 4096)
	f.Add([]byte(""), 0, 0, 1, 4096)
	root := testkit.TempDir(f)
	ev := files.NewEvents()
	if err := policy.Attach(ev); err != nil {
		f.Fatal(err)
	}
	x := &executor{provider: local.New(), events: ev}
	s := newSession(f, newRuntime(f, nil), allEffects, root)
	f.Fuzz(func(t *testing.T, content []byte, offset, limit, tail, bound int) {
		if offset < 0 || limit < 0 || tail < 0 || offset > 1<<20 || limit > 1<<20 || tail > limits.ReadTailMaxLines || bound < 2048 || bound > 1<<20 {
			return
		}
		if tail > 0 {
			offset, limit = 0, 0
		}
		if err := os.WriteFile(filepath.Join(root, "f"), content, 0o644); err != nil {
			t.Fatal(err)
		}
		req := request{session: s, caps: s.Capabilities(), maxOutput: int64(bound)}
		res, err := x.readFile(context.Background(), req, ReadArgs{Path: "f", Offset: offset, Limit: limit, Tail: tail})
		if err != nil {
			checkRefusal(t, content, offset, err)
			return
		}
		defer res.Release()
		if res.MediaType != "" {
			return // content that sniffs as an image
		}
		checkWindow(t, content, res, offset, limit, tail, bound)
	})
}

// lines splits content as read_file counts lines.
func lines(content []byte) []string {
	s := strings.TrimSuffix(string(content), "\n")
	if len(content) == 0 {
		return nil
	}
	return strings.Split(s, "\n")
}

func checkRefusal(t *testing.T, content []byte, offset int, err error) {
	t.Helper()
	code := fault.CodeOf(err)
	fits := code == fault.Limit && strings.Contains(err.Error(), "exceeds this tool's output bound")
	switch {
	case bytes.IndexByte(content, 0) >= 0:
		if code != fault.InvalidInput {
			t.Fatalf("binary: %v", err)
		}
	case !utf8.Valid(content):
		// UTF-8 is checked on the lines shown: a line too long to show
		// is refused for its length before its bytes are read.
		if code != fault.InvalidInput && !fits {
			t.Fatalf("bad UTF-8: %v", err)
		}
	case code == fault.InvalidInput && strings.Contains(err.Error(), "past the end") && max(offset, 1) > len(lines(content)):
	case fits:
	default:
		t.Fatalf("refused: %v", err)
	}
}

func checkWindow(t *testing.T, content []byte, res ReadResult, offset, limit, tail, bound int) {
	t.Helper()
	all := lines(content)
	if bytes.IndexByte(content, 0) >= 0 {
		t.Fatal("binary content served")
	}
	if len(res.ToolText()) > bound {
		t.Fatalf("%d bytes over the bound %d", len(res.ToolText()), bound)
	}
	if len(all) == 0 {
		return
	}
	shown := strings.Split(strings.TrimSuffix(res.ToolText(), "\n"), "\n")
	shown = shown[:len(shown)-1] // the footer
	if len(shown) != res.EndLine-res.StartLine+1 {
		t.Fatalf("%d lines shown for %d–%d", len(shown), res.StartLine, res.EndLine)
	}
	for i, l := range shown {
		n := res.StartLine + i
		num, text, _ := strings.Cut(l, "\t")
		if got, _ := strconv.Atoi(strings.TrimSpace(num)); got != n {
			t.Fatalf("line %d numbered %q", n, num)
		}
		want := strings.TrimSuffix(all[n-1], "\r")
		if cut, _, ok := strings.Cut(text, cutMarker); ok {
			if !strings.HasPrefix(want, cut) {
				t.Fatalf("line %d cut %q, want a prefix of %q", n, cut, want)
			}
		} else if text != want {
			t.Fatalf("line %d is %q, want %q", n, text, want)
		}
	}
	switch {
	case tail > 0:
		if res.EndLine != len(all) || (res.EndLine-res.StartLine+1 != min(tail, len(all)) && !strings.Contains(res.ToolText(), "do not fit")) {
			t.Fatalf("tail %d of %d: %d–%d", tail, len(all), res.StartLine, res.EndLine)
		}
	default:
		if limit == 0 {
			limit = limits.ReadDefaultLines
		}
		want := min(max(offset, 1)+limit-1, len(all))
		if res.StartLine != max(offset, 1) || res.EndLine != want && (res.NextOffset != res.EndLine+1 || !strings.Contains(res.ToolText(), "to fit the output bound")) {
			t.Fatalf("window %d+%d of %d: %+v", offset, limit, len(all), res)
		}
		if res.TotalLines != len(all) {
			t.Fatalf("total %d, want %d", res.TotalLines, len(all))
		}
	}
}
