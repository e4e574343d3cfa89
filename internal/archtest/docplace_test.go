package archtest

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestPackageDocPlace fails when a package's doc comment is missing, is
// split over files, or stands in a file other than doc.go or the one named
// for the package, where a reader looks for it. A folder of tests alone
// (e2e) has no package to document; the example project that the README's
// workflow reads is a user's code, not ours.
func TestPackageDocPlace(t *testing.T) {
	for _, p := range listPackages(t) {
		if from, _ := rel(p.ImportPath); len(p.GoFiles) == 0 || strings.HasPrefix(from, "examples/project/") {
			continue
		}
		if msg := docPlace(t, p); msg != "" {
			t.Errorf("%s: %s", p.ImportPath, msg)
		}
	}
}

// docPlace says what is wrong with where p's doc comment stands, or "".
func docPlace(t *testing.T, p pkg) string {
	t.Helper()
	var with []string
	name := ""
	for _, file := range p.GoFiles {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, file), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		name = f.Name.Name
		if f.Doc != nil {
			with = append(with, file)
		}
	}
	switch {
	case len(with) == 0:
		return "no package comment"
	case len(with) > 1:
		return "package comments in " + strings.Join(with, ", ") + ": one only"
	case with[0] != "doc.go" && with[0] != name+".go":
		return "the package comment is in " + with[0] + ": put it in doc.go or " + name + ".go"
	}
	return ""
}
