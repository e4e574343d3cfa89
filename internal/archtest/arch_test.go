package archtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/capkit/capkit"

// layer is a package's floor in the house; an import may only point to the
// same floor or below.
type layer int

const (
	ground    layer = iota // fault, capability, limits, internal/…
	core                   // kernel, kernel/…
	group                  // capability groups
	frontDoor              // serve/…
	hostLayer              // host, host/config
	command                // cmd/…: the mains and their commands
	outside                // e2e, examples, bench: may use anything, used by nothing
)

var layerNames = map[layer]string{
	ground: "ground", core: "kernel", group: "group", frontDoor: "front door",
	hostLayer: "host", command: "cmd", outside: "outside",
}

// groups are the top-level folders of capability groups.
var groups = []string{"files", "parse", "store", "archive", "search", "net", "run", "gateway", "audit"}

// testSupport packages sit on the kernel floor but may be imported by test
// files only.
var testSupport = []string{"internal/testkit", "internal/testkit/linewindow", "internal/testkit/toolrules"}

func classify(rel string) layer {
	top, _, _ := strings.Cut(rel, "/")
	switch {
	case slices.Contains(testSupport, rel):
		return core
	case top == "internal", rel == "fault", rel == "capability", rel == "limits":
		return ground
	case top == "kernel":
		return core
	case slices.Contains(groups, top):
		return group
	case top == "serve":
		return frontDoor
	case top == "host":
		return hostLayer
	case top == "cmd":
		return command
	}
	return outside
}

type pkg struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json", module+"/...")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("go list: %v\n%s", err, errb.String())
	}
	var pkgs []pkg
	dec := json.NewDecoder(&out)
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func rel(path string) (string, bool) {
	if path == module {
		return "", true
	}
	r, ok := strings.CutPrefix(path, module+"/")
	return r, ok
}

func ours(imports []string) []string {
	var r []string
	for _, imp := range imports {
		if p, ok := rel(imp); ok {
			r = append(r, p)
		}
	}
	return r
}

// TestLayers fails on any import that runs back up the floors, and reports
// the counts the layout is judged by.
func TestLayers(t *testing.T) {
	pkgs := listPackages(t)
	tops := map[string]bool{}
	arrows, back := 0, 0
	for _, p := range pkgs {
		from, _ := rel(p.ImportPath)
		top, _, _ := strings.Cut(from, "/")
		tops[top] = true
		lf := classify(from)
		for _, to := range ours(p.Imports) {
			arrows++
			lt := classify(to)
			switch {
			case lt == outside:
				t.Errorf("%s imports %s: nothing may import e2e, examples or bench", from, to)
				back++
			case slices.Contains(testSupport, to):
				t.Errorf("%s imports %s: test support is for _test files only", from, to)
				back++
			case lt > lf && lf != outside:
				t.Errorf("%s (%s) imports %s (%s): an import runs back up the layers", from, layerNames[lf], to, layerNames[lt])
				back++
			}
		}
	}
	t.Logf("%d packages in %d top-level folders; %d import arrows between them, %d running back up", len(pkgs), len(tops), arrows, back)
}

// TestRules checks the rules that floors alone do not express.
func TestRules(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		imps := ours(p.Imports)
		has := func(prefix string) bool {
			return slices.ContainsFunc(imps, func(s string) bool { return s == prefix || strings.HasPrefix(s, prefix+"/") })
		}
		switch {
		case from == "files" && (has("capability") || has("kernel")):
			t.Errorf("the seam (files) imports capability or kernel: %v", imps)
		case from == "files/tools" && has("files/policy"), from == "files/policy" && has("files/tools"):
			t.Errorf("%s: the file tools and the file policy meet only on the seam's events", from)
		}
		if classify(from) == group {
			checkOnlyToolsImportKernel(t, from, p)
		}
	}
}

// checkOnlyToolsImportKernel fails when a file of a capability package
// other than tools.go imports the kernel (or any kernel/… package).
func checkOnlyToolsImportKernel(t *testing.T, from string, p pkg) {
	t.Helper()
	for _, name := range p.GoFiles {
		if name == "tools.go" {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(p.Dir, name), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if r, ok := rel(path); ok && (r == "kernel" || strings.HasPrefix(r, "kernel/")) {
				t.Errorf("%s: imports %s; only tools.go of a capability package may", filepath.Join(from, name), r)
			}
		}
	}
}

// openers are the packages that may open files other than through
// internal/scope, and why. internal/scope is capkit's confinement: its
// targets are the one way into a root and carry the protected-path checks
// inside their operations, so every other package reaches a file through
// it. What opens files beneath it (internal/atfile, internal/noreplace)
// and an os.Root are for these packages only.
var openers = map[string]string{
	"internal/scope":              "the confinement itself",
	"internal/atfile":             "the descriptor-relative ground beneath the scope",
	"internal/noreplace":          "the no-replace rename beneath atfile and the scope",
	"host":                        "checks each configured root's own filesystem at start (statfs of the root, the mount table), to refuse a pseudo-filesystem root and warn of one mounted inside; it opens nothing inside a root",
	"run":                         "removes and measures the trees capkit owns outside every root (the contained commands' caches in the user's cache directory), which no caller names",
	"run/sandbox":                 "the container: once a command's processes are gone it moves what the command made at a protected name out of the root into the quarantine (a change the scope refuses to every caller) and removes the private trees it made; descriptor-relative, never following a link",
	"run/sandbox/internal/helper": "the container's helper: opens and makes the mount points of the container's own root, descriptor-relative and only on its own tmpfs mounts, before it pivots into it; it opens nothing in a session's root",
	"audit/trail":                 "the host's audit trail, a file the host names outside every root, set aside by a no-replace rename when it is rotated",
	"archive/textarchive":         "keeps its own archive directory (a host path the operator names, never a session's root; protected when it lies inside one) and the staging directory beside a new or restored one, built and then renamed into place without replacing anything: staging its database records and its cleanup finds stale, content-addressed blobs renamed in without replacing, SQLite opened by path; a file of a root (archive_add's path), the source policy and a backup file go through the scope",
}

// beneathScope are the packages only openers import.
var beneathScope = []string{"internal/atfile", "internal/noreplace"}

// TestOpenersOnly fails when a package other than openers imports the
// ground beneath the scope, names os.Root, os.OpenRoot or os.OpenInRoot,
// or makes a descriptor-relative file system call (openat, renameat,
// unlinkat, mkdirat and the like, through unix or syscall): a second way
// into a root, without the scope's checks. Test files may: they set up
// and inspect what the code under test may not reach.
func TestOpenersOnly(t *testing.T) {
	for _, p := range listPackages(t) {
		from, _ := rel(p.ImportPath)
		if _, ok := openers[from]; ok {
			continue
		}
		for _, imp := range ours(p.Imports) {
			if slices.Contains(beneathScope, imp) {
				t.Errorf("%s imports %s: reach files through internal/scope (or add the package to openers, saying why)", from, imp)
			}
		}
		for _, name := range p.GoFiles {
			checkNoRoot(t, from, filepath.Join(p.Dir, name))
		}
	}
	for from := range openers {
		if classify(from) == outside {
			t.Errorf("openers names %s, which is no package of ours", from)
		}
	}
}

// rootCalls are the names, by package, that reach into a directory by
// descriptor: the scope's own means.
var rootCalls = map[string][]string{
	"os": {"Root", "OpenRoot", "OpenInRoot"},
	"unix": {"Openat", "Openat2", "Renameat", "Renameat2", "Unlinkat", "Mkdirat", "Mknodat", "Linkat", "Symlinkat",
		"Readlinkat", "Fchmodat", "Fchownat", "Fstatat", "Faccessat", "Faccessat2", "Utimensat", "Statx", "NameToHandleAt", "OpenByHandleAt"},
	"syscall": {"Openat", "Renameat", "Unlinkat", "Mkdirat", "Mknodat", "Linkat", "Symlinkat", "Readlinkat", "Fchmodat", "Fchownat", "Fstatat", "Faccessat", "UtimesNanoAt"},
}

// checkNoRoot fails when the file names one of rootCalls.
func checkNoRoot(t *testing.T, from, path string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); ok && slices.Contains(rootCalls[x.Name], sel.Sel.Name) {
			t.Errorf("%s: %s uses %s.%s: reach files in a root through internal/scope", from, filepath.Base(path), x.Name, sel.Sel.Name)
		}
		return true
	})
}

// TestClassify pins the floor of a package of each kind, so that a rule
// cannot pass by classifying everything alike.
func TestClassify(t *testing.T) {
	for path, want := range map[string]layer{
		"fault": ground, "internal/atfile": ground, "kernel": core, "kernel/catalog": core,
		"files": group, "files/tools": group, "parse/feed": group, "net/fetch": group,
		"serve/mcpserver": frontDoor, "host": hostLayer, "host/config": hostLayer,
		"cmd/capkit/internal/cli": command, "cmd/capkit": command, "e2e": outside, "internal/testkit": core,
	} {
		if got := classify(path); got != want {
			t.Errorf("classify(%q) = %s, want %s", path, layerNames[got], layerNames[want])
		}
	}
	if fmt.Sprint(ground < core && core < group && group < frontDoor && frontDoor < hostLayer && hostLayer < command) != "true" {
		t.Error("floors out of order")
	}
}
