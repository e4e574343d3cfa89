package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// TestWalkDepthBound: glob and grep search limits.WalkMaxDepth levels and
// say how many deeper directories they did not search.
func TestWalkDepthBound(t *testing.T) {
	root := testkit.TempDir(t)
	dir := root
	for range limits.WalkMaxDepth - 1 {
		dir = filepath.Join(dir, "d")
	}
	writeFile(t, filepath.Join(dir, "at.txt"), "needle\n")        // depth WalkMaxDepth
	writeFile(t, filepath.Join(dir, "d", "past.txt"), "needle\n") // depth WalkMaxDepth+1
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	for _, c := range []struct {
		tool string
		args obj
	}{{Glob, obj{"pattern": "**/*.txt"}}, {Grep, obj{"pattern": "needle"}}} {
		text := mustCall(t, s, c.tool, c.args)
		if !strings.Contains(text, "at.txt") || strings.Contains(text, "past.txt") || !strings.Contains(text, "1 directories deeper than 64 levels not searched") {
			t.Fatalf("%s:\n%s", c.tool, text)
		}
	}
}

func TestGrepFileAndIgnoreBounds(t *testing.T) {
	root := testkit.TempDir(t)
	at := "needle\n" + strings.Repeat("x", limits.GrepMaxFileBytes-len("needle\n"))
	writeFile(t, filepath.Join(root, "at.txt"), at)
	writeFile(t, filepath.Join(root, "past.txt"), at+"x")
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	text := mustCall(t, s, Grep, obj{"pattern": "needle"})
	if !strings.Contains(text, "at.txt:1:needle") || !strings.Contains(text, "past.txt:1:needle") || strings.Contains(text, "not searched") ||
		!strings.Contains(text, fmt.Sprintf("2 lines longer than %s were searched in pieces", limits.Bytes(limits.GrepChunkBytes))) {
		t.Fatalf("files of any size are searched, long lines reported:\n%s", text)
	}
	os.Remove(filepath.Join(root, "at.txt"))
	os.Remove(filepath.Join(root, "past.txt"))

	pad := func(n int) string { return "*.skip\n" + strings.Repeat("#", n-len("*.skip\n")) }
	writeFile(t, filepath.Join(root, "a", ".gitignore"), pad(limits.GitignoreMaxBytes))
	writeFile(t, filepath.Join(root, "a", "f.skip"), "needle\n")
	writeFile(t, filepath.Join(root, "b", ".gitignore"), pad(limits.GitignoreMaxBytes+1))
	writeFile(t, filepath.Join(root, "b", "f.skip"), "needle\n")
	text = mustCall(t, s, Grep, obj{"pattern": "needle"})
	if strings.Contains(text, "a/f.skip") || !strings.Contains(text, "b/f.skip") || !strings.Contains(text, "1 .gitignore files or rules were not honoured") {
		t.Fatalf("gitignore bound:\n%s", text)
	}
}

func TestGrepMatchesAtBound(t *testing.T) {
	root := testkit.TempDir(t)
	writeFile(t, filepath.Join(root, "f"), strings.Repeat("match\n", limits.GrepMaxMatches))
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	var out GrepResult
	json.Unmarshal(mustResult(t, s, Grep, obj{"pattern": "match"}).Structured, &out)
	if out.Shown != limits.GrepMaxMatches || out.NotShown != 0 {
		t.Fatalf("%+v", out)
	}
	json.Unmarshal(mustResult(t, s, Grep, obj{"pattern": "match", "head_limit": limits.GrepMaxMatches}).Structured, &out)
	if out.Shown != limits.GrepMaxMatches {
		t.Fatalf("%+v", out)
	}
}
