package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWrapSaysItsCauseOnce fails where a failure would say its cause
// twice (fault.Error.Error prints the message, then the cause): a
// fault.Wrap whose message formats its own cause, a sentinel wrapped as a
// cause that is not a fault.Mark (its text would follow a message that
// already says it), and errors.Join as a cause (its parts go on lines of
// their own).
func TestWrapSaysItsCauseOnce(t *testing.T) {
	root := repoRoot(t)
	type file struct {
		name string
		f    *ast.File
		fset *token.FileSet
	}
	var all []file
	sentinels := map[string]string{} // name → where declared with errors.New
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			if rel == "e2e" || rel == "bench" || rel == "examples" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, rel, src, 0)
		if err != nil {
			return err
		}
		all = append(all, file{rel, f, fset})
		for name, pos := range errorsNewVars(fset, f) {
			sentinels[name] = pos
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		for _, p := range wrapProblems(f.fset, f.f, sentinels) {
			t.Error(p)
		}
	}
}

// TestWrapProblemsDetected holds the check to what it must find.
func TestWrapProblemsDetected(t *testing.T) {
	for _, c := range []struct {
		src  string
		want int
	}{
		{`func f(err error) error { return fault.Wrap(fault.IO, err, "reading failed: %v", err) }`, 1},
		{`func f(d error) error { return fault.Wrap(fault.Denied, d, "%s", d.Error()) }`, 1},
		{`func f(err error) error { return fault.Wrap(fault.IO, err, "reading %s failed", name) }`, 0},
		{`func f(fe *fault.Error, err error) error { return fault.Wrap(fe.Code, err, "policy: %s", fe.Message) }`, 0},
		{`var ErrX = errors.New("x"); func f() error { return fault.Wrap(fault.IO, ErrX, "x happened") }`, 1},
		{`var ErrX = fault.NewMark("x"); func f() error { return fault.Wrap(fault.IO, ErrX, "x happened") }`, 0},
		{`func f(err error) error { return fault.Wrap(fault.IO, errors.Join(ErrY, err), "y") }`, 1},
		{`var errX = errors.New("x"); func f(err error) error { return fault.Wrap(fault.IO, fmt.Errorf("%w: %w", errX, err), "x") }`, 1},
		{`var errX = fault.NewMark("x"); func f(err error) error { return fault.Wrap(fault.IO, errX.With(err), "x") }`, 0},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package x\n"+c.src, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := wrapProblems(fset, f, errorsNewVars(fset, f)); len(got) != c.want {
			t.Errorf("%s: found %v, want %d", c.src, got, c.want)
		}
	}
}

// errorsNewVars are the package-level variables of f declared with
// errors.New.
func errorsNewVars(fset *token.FileSet, f *ast.File) map[string]string {
	out := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, v := range vs.Values {
				if call, ok := v.(*ast.CallExpr); ok && types.ExprString(call.Fun) == "errors.New" && i < len(vs.Names) {
					out[vs.Names[i].Name] = fset.Position(vs.Names[i].Pos()).String()
				}
			}
		}
	}
	return out
}

// wrapProblems lists the fault.Wrap calls of f that would say a cause
// twice, or break the one-line message.
func wrapProblems(fset *token.FileSet, f *ast.File, sentinels map[string]string) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || types.ExprString(call.Fun) != "fault.Wrap" || len(call.Args) < 3 {
			return true
		}
		at := fset.Position(call.Pos()).String()
		cause := call.Args[1]
		name := types.ExprString(cause)
		for _, a := range call.Args[3:] {
			if s := types.ExprString(a); s == name || s == name+".Error()" {
				out = append(out, at+": the message formats its cause "+name+" (Error appends it): say what failed, not the cause again")
			}
		}
		if pos, ok := sentinels[lastName(cause)]; ok {
			out = append(out, at+": the cause "+name+" is a sentinel made with errors.New ("+pos+"): declare it with fault.NewMark, so it is not said after the message")
		}
		if c, ok := cause.(*ast.CallExpr); ok && types.ExprString(c.Fun) == "errors.Join" {
			out = append(out, at+": errors.Join as a cause prints its parts on lines of their own: mark the cause (fault.Mark.With)")
		}
		if c, ok := cause.(*ast.CallExpr); ok && types.ExprString(c.Fun) == "fmt.Errorf" {
			for _, a := range c.Args[1:] {
				if pos, ok := sentinels[lastName(a)]; ok {
					out = append(out, at+": the cause formats the sentinel "+types.ExprString(a)+" ("+pos+") into its text, after a message that already says it: make it a fault.Mark and wrap the detail with its With")
				}
			}
		}
		return true
	})
	return out
}

// lastName is the identifier an expression ends with: x, or Sel of pkg.Sel.
func lastName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return x.Sel.Name
	}
	return ""
}
