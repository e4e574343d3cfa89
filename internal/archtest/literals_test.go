package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// literalDirs are the folders whose descriptions and help are checked for
// typed bounds: every folder with tools or commands.
var literalDirs = []string{
	"parse", "store", "archive", "files", "kernel", "serve", "host",
	"search", "net", "run", "gateway", "cmd",
}

// boundLiteral matches a number typed as a bound: a count of a unit, a
// duration, or a number after words that introduce a bound. Numbers that
// are not bounds (SHA-256, UTF-8, RFC 8785, port 443, HTTP 429, exit codes,
// mode 0600, an example's arguments, a start position "default 0" or
// "default 1") match none of these.
var boundLiteral = regexp.MustCompile(`(?i)` +
	`\b\d[\d,_.]*\s*(KiB|MiB|GiB|bytes?|entries|members|rows|columns|nodes|attributes|path elements|elements|items|refs|hits|word pieces|levels|characters|calls|requests|names|files|records|steps|redirects)\b` +
	`|\b\d+(ms|s|m|h)\b` +
	`|\b(default|at most|up to|maximum|limit of|depth|deeper than|more than|fewer than|at least)\s+(\d{2,}|[2-9])\b`)

// TestNoTypedBounds fails when a tool description, a tool's schema
// description (jsonschema struct tag) or CLI help (cobra Short/Long, flag
// usage) types a bound's number instead of formatting it from limits.
func TestNoTypedBounds(t *testing.T) {
	root := repoRoot(t)
	for _, dir := range literalDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			for _, h := range typedBounds(t, rel, src) {
				t.Errorf("%s: a bound typed as a literal (format it from limits): %q in %s", h.pos, h.match, h.context)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestTypedBoundsDetected holds the check to the literals it must find and
// the numbers it must leave alone.
func TestTypedBoundsDetected(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{`var _ = M{Description: "at most 4 MiB of HTML"}`, 1},
		{"var _ = M{Long: `a journal at most 32 MiB`}", 1},
		{`var _ = M{Short: "Replace PATH (at most " + limits.Bytes(limits.StateMaxBytes) + ")"}`, 0},
		{`const fetchDescription = "times out after 30s"`, 1},
		{`func f() { cmd.Flags().IntVar(&x, "max-depth", 0, "fail deeper than this (default 64, at most 256)") }`, 1},
		{"type A struct{ N int `json:\"n\" jsonschema:\"how many, 1 to 1000 entries\"` }", 1},
		{"type A struct{ D string `json:\"d\" jsonschema:\"the SHA-256 (64 hex digits)\"` }", 0},
		{`var _ = M{Description: "UTF-8, RFC 8785, port 443, status 429, exit 6, mode 0600; Example: {\"limit\": 20}"}`, 0},
		{`var _ = M{Description: fmt.Sprintf("at most %d bytes", limits.X)}`, 0},
		{`func f() string { return "at most 4 MiB" }`, 0}, // not a description
		{"type A struct{ O int `json:\"o\" jsonschema:\"first line, 1-based (default 1); offset (default 0)\"` }", 0},
		{"type A struct{ L int `json:\"l\" jsonschema:\"records to return; default and maximum 1000\"` }", 1},
		{"var _ = M{Long: `Example:\n  capkit run --timeout 2m -- go vet\n  done: 2 entries\nAt most 3 entries.`}", 1},
	} {
		got := typedBounds(t, "x.go", []byte("package x\n"+c.src))
		if len(got) != c.want {
			t.Errorf("%s: found %v, want %d", c.src, got, c.want)
		}
	}
}

type typedBound struct{ pos, match, context string }

// typedBounds returns the bound-looking numbers in the description
// literals of one file.
func typedBounds(t *testing.T, name string, src []byte) []typedBound {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, 0)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var out []typedBound
	check := func(lit *ast.BasicLit, context string) {
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return
		}
		if context == "jsonschema tag" {
			s = reflect.StructTag(s).Get("jsonschema")
		}
		example := false
		for _, line := range strings.Split(s, "\n") {
			// An example (its line, and the indented lines under an
			// "Example:" heading) shows arguments and output, not bounds.
			if strings.HasPrefix(line, "Example") {
				example = true
				continue
			}
			if example && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t")) {
				continue
			}
			example = false
			if m := boundLiteral.FindString(line); m != "" {
				out = append(out, typedBound{fset.Position(lit.Pos()).String(), m, context})
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.Field:
			if x.Tag != nil {
				check(x.Tag, "jsonschema tag")
			}
		case *ast.KeyValueExpr:
			if id, ok := x.Key.(*ast.Ident); ok && descriptionKeys[id.Name] {
				literals(x.Value, func(l *ast.BasicLit) { check(l, id.Name) })
			}
		case *ast.ValueSpec:
			for i, id := range x.Names {
				if isDescriptionName(id.Name) && i < len(x.Values) {
					literals(x.Values[i], func(l *ast.BasicLit) { check(l, id.Name) })
				}
			}
		case *ast.CallExpr:
			if sel, ok := x.Fun.(*ast.SelectorExpr); ok && isFlagDefinition(sel.Sel.Name) && len(x.Args) > 0 {
				literals(x.Args[len(x.Args)-1], func(l *ast.BasicLit) { check(l, "flag usage") })
			}
		}
		return true
	})
	return out
}

var descriptionKeys = map[string]bool{"Description": true, "Summary": true, "Title": true, "Short": true, "Long": true}

func isDescriptionName(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "desc") || strings.Contains(l, "help") || strings.Contains(l, "usage")
}

// isFlagDefinition reports whether a method defines a pflag flag (its last
// argument is the usage text).
func isFlagDefinition(name string) bool {
	return strings.HasSuffix(name, "Var") || strings.HasSuffix(name, "VarP")
}

// literals calls f for each string literal in e, including those inside
// concatenations and call arguments such as fmt.Sprintf's format.
func literals(e ast.Expr, f func(*ast.BasicLit)) {
	ast.Inspect(e, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING {
			f(l)
		}
		return true
	})
}

// repoRoot is the module's directory (tests run in their package's).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found: %v", err)
	}
	return root
}
