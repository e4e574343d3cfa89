package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
)

// funcCalls is how often the function spec (pkg/path.Func or
// pkg/path.Type.Method, in the source tree src) ran in with but not in
// base: the difference of the counter of its body's first block. spec
// may name alternatives, A|B: the first the tree has is counted (one step
// under its name in each revision).
func funcCalls(src, spec string, base, with map[block]int) (int, error) {
	alts := strings.Split(spec, "|")
	for i, alt := range alts {
		n, err := oneFunc(src, alt, base, with)
		if errors.Is(err, errNoFunc) && i < len(alts)-1 {
			continue
		}
		return n, err
	}
	return 0, errNoFunc
}

var errNoFunc = errors.New("no such function")

func oneFunc(src, spec string, base, with map[block]int) (int, error) {
	slash := strings.LastIndex(spec, "/")
	dot := strings.Index(spec[slash+1:], ".")
	if dot < 0 {
		return 0, fmt.Errorf("want pkg/path.Func")
	}
	pkg, name := spec[:slash+1+dot], spec[slash+2+dot:]
	recv, fn, isMethod := strings.Cut(name, ".")
	if !isMethod {
		fn, recv = recv, ""
	}
	fset := token.NewFileSet()
	dir := filepath.Join(src, pkg)
	built := func(fi fs.FileInfo) bool {
		ok, err := build.Default.MatchFile(dir, fi.Name())
		return err == nil && ok
	}
	pkgs, err := parser.ParseDir(fset, dir, built, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("%w: no package %s", errNoFunc, pkg)
	}
	if err != nil {
		return 0, err
	}
	for _, p := range pkgs {
		for path, f := range p.Files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil || fd.Name.Name != fn || receiver(fd) != recv {
					continue
				}
				file := module + "/" + pkg + "/" + filepath.Base(path)
				lb := fset.Position(fd.Body.Lbrace)
				rb := fset.Position(fd.Body.Rbrace)
				return firstBlock(file, lb, rb, base, with), nil
			}
		}
	}
	return 0, fmt.Errorf("%w: %s in %s", errNoFunc, name, pkg)
}

// firstBlock is the counter difference of the first block inside the
// braces lb..rb of file.
func firstBlock(file string, lb, rb token.Position, base, with map[block]int) int {
	var first *block
	for b := range with {
		if b.file != file || before(b.line0, b.col0, lb.Line, lb.Column) || before(rb.Line, rb.Column, b.line0, b.col0) {
			continue
		}
		if first == nil || before(b.line0, b.col0, first.line0, first.col0) {
			c := b
			first = &c
		}
	}
	if first == nil {
		return 0
	}
	return with[*first] - base[*first]
}

func before(l0, c0, l1, c1 int) bool { return l0 < l1 || l0 == l1 && c0 < c1 }

// receiver is the name of fd's receiver type, "" for a function.
func receiver(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	t := fd.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if g, ok := t.(*ast.IndexExpr); ok {
		t = g.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}
