package sandbox_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/capkit/capkit/run/sandbox"

	// Libraries capkit links whose package init has work to do, some of
	// them with imports no heavier than the helper's: the helper must be
	// serving before any of them initializes.
	_ "github.com/go-json-experiment/json"
	_ "github.com/google/jsonschema-go/jsonschema"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/pelletier/go-toml/v2"
	_ "golang.org/x/net/html"
	_ "golang.org/x/text/encoding/charmap"
	_ "golang.org/x/text/encoding/japanese"
	_ "golang.org/x/text/secure/precis"
)

// earlyLibraries may initialize before the helper: they sort before it
// is ready and import only the earliest standard packages (sync,
// math/bits), a few microseconds of init in all.
var earlyLibraries = map[string]bool{
	"github.com/jackc/pgx/v5/internal/iobufpool": true,
	"github.com/jackc/puddle/v2":                 true,
}

// libraries are the packages above that the trace must show when the
// test binary starts normally, so that their absence before the helper
// means something.
var libraries = []string{
	"golang.org/x/net/html",
	"golang.org/x/text/encoding/charmap",
	"golang.org/x/text/secure/precis",
}

// inits runs this test binary with args and GODEBUG=inittrace=1 and
// returns the packages whose init ran, in order.
func inits(t *testing.T, args ...string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run() // the helper without its descriptors fails: its trace is what counts
	var pkgs []string
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) > 2 && f[0] == "init" && strings.HasPrefix(f[2], "@") {
			pkgs = append(pkgs, f[1])
		}
	}
	return pkgs
}

// TestInitOrder: a program started as the helper runs no package init of
// a library but the helper's own imports before the helper takes over
// (see the package comment of run/sandbox/internal/helper); an import
// there that sorts after the libraries (strings, fmt, encoding/json,
// path/filepath, golang.org/x/sys/unix) makes this fail. It runs this
// test binary: the helper's own tests would compile their imports into
// the helper.
func TestInitOrder(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/capkit/capkit/run/sandbox/internal/helper").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	own := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		own[p] = true
	}
	normal := inits(t, "-test.run=^$")
	for _, lib := range libraries {
		if !strings.Contains(strings.Join(normal, " ")+" ", lib+" ") {
			t.Fatalf("the trace of a normal start does not show %s: %v", lib, normal)
		}
	}
	before := inits(t, sandbox.HelperArg)
	if len(before) == 0 || len(before) >= len(normal) {
		t.Fatalf("started as the helper, %d packages initialized (%d in a normal start): the helper did not take over from its init", len(before), len(normal))
	}
	for _, p := range before {
		first, _, _ := strings.Cut(p, "/")
		if strings.Contains(first, ".") && !own[p] && !earlyLibraries[p] {
			t.Errorf("%s initialized before the helper, which does not import it", p)
		}
	}
}

// TestHelperByHand: the program started as the helper without Run's spec
// and report pipes (by hand) says so on stderr and exits 125.
func TestHelperByHand(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, sandbox.HelperArg)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 125 || !strings.Contains(stderr.String(), "it is started by sandbox.Run") {
		t.Fatalf("helper started by hand: %v, stderr %q; want exit 125 and the reason", err, stderr.String())
	}
}
