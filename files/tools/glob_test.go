package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/limits"
)

// TestGlobOrderAndPaging: newest first by default (ties by path), path
// order on request, offset and limit pages, and their bounds.
func TestGlobOrderAndPaging(t *testing.T) {
	root := testkit.TempDir(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range []string{"a.go", "b.go", "c.go", "d/e.go", "d/f.go"} {
		writeFile(t, filepath.Join(root, p), "")
		mtime := base.Add(time.Duration(i) * time.Hour)
		if p == "d/f.go" {
			mtime = base // ties with a.go: path order
		}
		if err := os.Chtimes(filepath.Join(root, p), mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	s := newSession(t, newRuntime(t, nil), allEffects, root)
	cases := []struct {
		args obj
		want []string
		code fault.Code
	}{
		{obj{"pattern": "**/*.go"}, []string{"d/e.go", "c.go", "b.go", "a.go", "d/f.go"}, ""},
		{obj{"pattern": "**/*.go", "sort": "modified"}, []string{"d/e.go", "c.go", "b.go", "a.go", "d/f.go"}, ""},
		{obj{"pattern": "**/*.go", "sort": "path"}, []string{"a.go", "b.go", "c.go", "d/e.go", "d/f.go"}, ""},
		{obj{"pattern": "**/*.go", "sort": "size"}, nil, fault.InvalidInput},
		{obj{"pattern": "**/*.go", "sort": "path", "limit": 2}, []string{"a.go", "b.go"}, ""},
		{obj{"pattern": "**/*.go", "sort": "path", "limit": 2, "offset": 2}, []string{"c.go", "d/e.go"}, ""},
		{obj{"pattern": "**/*.go", "sort": "path", "offset": 4}, []string{"d/f.go"}, ""},
		{obj{"pattern": "**/*.go", "offset": 5}, nil, ""},
		{obj{"pattern": "**/*.go", "limit": limits.GlobMaxLimit, "sort": "path"}, []string{"a.go", "b.go", "c.go", "d/e.go", "d/f.go"}, ""},
		{obj{"pattern": "**/*.go", "limit": limits.GlobMaxLimit + 1}, nil, fault.Limit},
		{obj{"pattern": "**/*.go", "limit": -1}, nil, fault.InvalidInput},
		{obj{"pattern": "**/*.go", "offset": limits.GrepMaxOffset}, nil, ""},
		{obj{"pattern": "**/*.go", "offset": limits.GrepMaxOffset + 1}, nil, fault.Limit},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.args), func(t *testing.T) {
			res, err := testkit.Call(t, s, Glob, c.args)
			if got := fault.CodeOf(err); got != c.code {
				t.Fatalf("code %q (%v), want %q", got, err, c.code)
			}
			if err == nil && !slices.Equal(pathsOf(res.Text), c.want) {
				t.Fatalf("got %q, want %q", pathsOf(res.Text), c.want)
			}
		})
	}
	var out GlobResult
	res := mustResult(t, s, Glob, obj{"pattern": "**/*.go", "limit": 2, "offset": 1})
	json.Unmarshal(res.Structured, &out)
	if out.Total != 5 || out.Shown != 2 || out.NextOffset != 3 || !strings.Contains(res.Text, "the next page is offset=3") {
		t.Fatalf("%+v\n%s", out, res.Text)
	}
}

// TestCompileGlob pins the dialect, including where it differs from a
// naive translation.
func TestCompileGlob(t *testing.T) {
	cases := []struct {
		pattern, name string
		want          bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "d/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "d/e/a.go", true},
		{"a*/**", "a", false},
		{"a*/**", "ab/c", true},
		{"a/**/b", "a/b", true},
		{"a/**/b", "a/x/y/b", true},
		{"a**b", "axb", true},
		{"a**b", "ax/b", false},
		{"?.go", "a.go", true},
		{"?.go", "/.go", false},
		{"[abc].go", "b.go", true},
		{"[!abc].go", "b.go", false},
		{"[^abc].go", "d.go", true},
		{"[a-c].go", "b.go", true},
		{"[a-].go", "-.go", true},
		{"{a,b/c}", "b/c", true},
		{"{a,{b,c}d}", "cd", true},
		{"{,a}x", "x", true},
		{`\*.go`, "*.go", true},
		{`\*.go`, "a.go", false},
		{"a,b", "a,b", true},
		{"(a|b)+$", "(a|b)+$", true},
		{strings.Repeat("{a,*}", 40) + "x", strings.Repeat("a", 100), false},
	}
	for _, c := range cases {
		re, err := compileGlob(c.pattern, doublestarSyntax)
		if err != nil {
			t.Fatalf("%q: %v", c.pattern, err)
		}
		if got := re.MatchString(c.name); got != c.want {
			t.Errorf("%q on %q: %v, want %v (%s)", c.pattern, c.name, got, c.want, re)
		}
	}
	for _, bad := range []string{"[unclosed", "{a,b", "a}", `a\`, "[]", "[z-a]"} {
		if _, err := compileGlob(bad, doublestarSyntax); err == nil {
			t.Errorf("%q compiled", bad)
		}
	}
}

// FuzzGlobCompile: any pattern compiles or fails cleanly, its regular
// expression is linear in the pattern's length (so matching is linear in
// pattern and name), and it agrees with doublestar where both are defined.
func FuzzGlobCompile(f *testing.F) {
	for _, seed := range [][2]string{
		{"**/*.go", "a/b.go"}, {"{a,b}/*", "a/x"}, {"[!a-c]?", "dx"}, {"a/**", "a"},
		{strings.Repeat("{a,*}", 40) + "x", strings.Repeat("a", 100)}, {`\{*\}`, "{x}"}, {"{a,{b,c}}**", "cd"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, pattern, name string) {
		if len(pattern) > 256 || len(name) > 256 {
			return
		}
		expr, err := globExpr(pattern, doublestarSyntax)
		if err != nil {
			return
		}
		if len(expr) > 16*len(pattern)+16 {
			t.Fatalf("%q: expression of %d bytes", pattern, len(expr))
		}
		re, err := compileGlob(pattern, doublestarSyntax)
		if err != nil {
			return // a class such as [z-a] that RE2 refuses
		}
		got := re.MatchString(name)
		if !comparable(pattern, name) {
			return
		}
		want, derr := doublestar.Match(pattern, name)
		if derr == nil && doublestar.ValidatePattern(pattern) && got != want {
			t.Fatalf("%q on %q: %v, doublestar %v (%s)", pattern, name, got, want, expr)
		}
	})
}

// comparable reports whether doublestar is a fair reference for pattern
// on name: small inputs, names as a walk produces them (no empty elements), classes
// not asked to match a separator (ours never do), no *** (a * to us, doublestar
// matches less) nor stars with braces (where doublestar errs), and
// no escapes of ordinary characters (where the two dialects knowingly
// differ).
func comparable(pattern, name string) bool {
	if len(pattern) > 24 || len(name) > 24 || strings.Count(pattern, "*")+strings.Count(pattern, "{") > 6 {
		return false // doublestar backtracks: exponential on patterns such as the hostile seed
	}
	if name == "" || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") || strings.Contains(name, "//") {
		return false
	}
	if strings.Contains(pattern, "[") && strings.Contains(name, "/") {
		return false
	}
	if strings.Contains(pattern, "*") && strings.Contains(pattern, "{") {
		return false // doublestar: "{0*}{*}" does not match "0", "{*}*" matches "0/0"
	}
	if strings.Contains(pattern, "***") {
		return false
	}
	if strings.HasSuffix(pattern, "/**") {
		return false // doublestar: "a/**" matches a, "a*/**" does not; to us neither does
	}
	if strings.Contains(pattern, `\`) || strings.Contains(pattern, "//") || strings.HasSuffix(pattern, "/") {
		return false
	}
	return true
}

func TestIgnoreRules(t *testing.T) {
	cases := []struct {
		rules, name string
		isDir       bool
		want        bool
	}{
		{"*.log", "a.log", false, true},
		{"*.log", "d/e/a.log", false, true},
		{"*.log\n!keep.log", "d/keep.log", false, false},
		{"build/", "build", true, true},
		{"build/", "build", false, false},
		{"/top", "top", false, true},
		{"/top", "d/top", false, false},
		{"a/b", "a/b", false, true},
		{"a/b", "x/a/b", false, false},
		{"top\n!/top", "top", false, false},
		{"top\n!/top", "d/top", false, true},
		{"d/*.tmp", "d/a.tmp", false, true},
		{"d/*.tmp", "x/d/a.tmp", false, false},
		{"**/gen", "x/y/gen", true, true},
		{"a/**", "a/b/c", false, true},
		{"a/**", "a", true, false},
		{"# comment\n\n  \nx", "x", false, true},
		{`\#lit`, "#lit", false, true},
		{`\!lit`, "!lit", false, true},
		{"trail  ", "trail", false, true},
		{"x\r", "x", false, true},
		{"[ab]?", "bz", false, true},
		{"*.x\n!*.x\n*.x", "f.x", false, true},
		{"{a,b}", "a", false, false}, // no braces in gitignore
		{"{a,b}", "{a,b}", false, true},
		// rules matched by regexp after a substring test of their text
		{"*.py[cod]", "d/a.pyc", false, true},
		{"*.py[cod]", "a.pyx", false, false},
		{"foo*bar", "fooXbar", false, true},
		{"foo*bar", "xbar", false, false},
		{`a\*b`, "a*b", false, true},
		{`a\*b`, "axb", false, false},
		{"*é?", "café1", false, true},
		{"/d/*.tmp?", "d/x.tmp1", false, true},
		{"/d/*.tmp?", "e/x.tmp1", false, false},
		{"a\xffb*", "a\xfeb1", false, true}, // an invalid byte matches any invalid byte
		{strings.Repeat("x", limits.GitignoreMaxRuleBytes+1), strings.Repeat("x", limits.GitignoreMaxRuleBytes+1), false, false},
		{strings.Repeat("x", limits.GitignoreMaxRuleBytes), strings.Repeat("x", limits.GitignoreMaxRuleBytes), false, true},
	}
	for _, c := range cases {
		f, _ := parseIgnore(".", []byte(c.rules), limits.GitignoreMaxRules)
		s := (*ignoreChain)(nil).with(f)
		if got := s.ignored(c.name, c.isDir); got != c.want {
			t.Errorf("rules %.40q on %.40q (dir %v): %v, want %v", c.rules, c.name, c.isDir, got, c.want)
		}
	}
}

// TestIgnoreScopeAndBound: rules apply below the directory that declares
// them, deeper files override shallower ones, and a file whose rules pass
// what may be in force is refused whole.
func TestIgnoreScopeAndBound(t *testing.T) {
	var root *ignoreChain
	topFile, _ := parseIgnore(".", []byte("*.gen\n"), root.room())
	top := root.with(topFile)
	subFile, _ := parseIgnore("sub", []byte("!keep.gen\n*.tmp\n"), top.room())
	sub := top.with(subFile)
	for name, want := range map[string]bool{"sub/a.gen": true, "sub/keep.gen": false, "sub/a.tmp": true, "subx/a.tmp": false, "sub.tmp": false} {
		if got := sub.ignored(name, false); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if top.ignored("other/a.tmp", false) || !top.ignored("other/keep.gen", false) {
		t.Error("sub's rules applied outside sub")
	}
	if top.rules != 1 || sub.rules != 3 {
		t.Errorf("%d and %d rules in force in the root and sub, want 1 and 3", top.rules, sub.rules)
	}
	s := top
	rules := strings.Repeat("r\n", s.room())
	if f, _ := parseIgnore("a", []byte(rules), s.room()); f == nil {
		t.Fatal("rules at the bound refused")
	}
	if f, _ := parseIgnore("a", []byte(rules+"r\n"), s.room()); f != nil {
		t.Fatal("rules past the bound kept")
	}
}
