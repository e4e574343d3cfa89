package run

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/internal/atfile"
	"github.com/capkit/capkit/internal/testkit"
	"github.com/capkit/capkit/kernel"
)

// goModule writes a one-file Go library whose compiled form is this
// test's alone (its source names the test), so that a cache hit can only
// come from the cache the test made.
func goModule(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/lib\n\ngo 1.22\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "lib.go"), []byte("package lib\n\n// F is "+t.Name()+" "+root+".\nfunc F() int { return 1 }\n"), 0o644))
	return root
}

func goConfig(t *testing.T, cache string, reduced bool) Config {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	return Config{Cache: cache, Reduced: reduced,
		Env: []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod"}}
}

// shell runs a command line with run_shell and returns its stdout.
func shell(t *testing.T, s *kernel.Session, command string) string {
	t.Helper()
	res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": command})
	if err != nil {
		t.Fatal(err)
	}
	if r := decode(t, res); r.ExitCode != 0 {
		t.Fatalf("%s: exit %d\n%s", command, r.ExitCode, res.Text)
	}
	return stdoutOf(res.Text)
}

// stdoutOf is the stdout a tool's text shows.
func stdoutOf(text string) string {
	_, out, ok := strings.Cut(text, "--- stdout ---\n")
	if !ok {
		return ""
	}
	out, _, _ = strings.Cut(out, "--- stderr ---\n")
	return out
}

// TestToolCacheUsed: with a cache, GOCACHE points into it (not at the
// host's own build cache, nor into the private /tmp), and a second go
// build over the same root, in a new container, compiles nothing: its
// package comes from the cache, whose entries are on the host. A build
// over another root has a cache of its own. In full and in reduced
// containment.
func TestToolCacheUsed(t *testing.T) {
	host, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Skip("no Go toolchain on PATH")
	}
	for _, reduced := range []bool{false, true} {
		t.Run(map[bool]string{false: "full", true: "reduced"}[reduced], func(t *testing.T) {
			base := t.TempDir()
			rt := runtimeWith(t, goConfig(t, base, reduced))
			root, other := goModule(t), goModule(t)
			s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
			gocache := strings.TrimSpace(shell(t, s, "go env GOCACHE"))
			if !strings.HasPrefix(gocache, base+"/") || gocache == strings.TrimSpace(string(host)) {
				t.Fatalf("GOCACHE in the container = %q, want a directory in %s", gocache, base)
			}
			build := "go build -x . 2>&1 | grep -c '/compile ' || true"
			if n := strings.TrimSpace(shell(t, s, build)); n != "1" {
				t.Fatalf("the first build ran the compiler %s times, want 1", n)
			}
			if n := strings.TrimSpace(shell(t, s, build)); n != "0" {
				t.Errorf("the second build ran the compiler %s times, want 0 (a cache hit)", n)
			}
			entries, err := filepath.Glob(filepath.Join(gocache, "??", "*-d"))
			if err != nil || len(entries) == 0 {
				t.Errorf("no cache entry on the host in %s: %v", gocache, err)
			}
			o := testkit.Session(t, rt, testkit.Grant(t, []string{other}, capability.RunShell))
			if c := strings.TrimSpace(shell(t, o, "go env GOCACHE")); c == gocache || !strings.HasPrefix(c, base+"/") {
				t.Errorf("another root's GOCACHE = %q, want its own in %s (not %s)", c, base, gocache)
			}
		})
	}
}

// TestToolCacheVariables: every tool's variable points into the run's
// cache, at a directory that exists; the host's [run] env overrides one;
// without a cache none is set.
func TestToolCacheVariables(t *testing.T) {
	root := t.TempDir()
	base := t.TempDir()
	rt := runtimeWith(t, Config{Cache: base, Env: []string{"PIP_CACHE_DIR=/nowhere"}})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	out := shell(t, s, `for v in GOCACHE GOMODCACHE npm_config_cache CARGO_HOME XDG_CACHE_HOME; do eval d=\$$v; test -d "$d" && touch "$d/written" && echo "$v=$d"; done; echo "PIP_CACHE_DIR=$PIP_CACHE_DIR"`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 || lines[5] != "PIP_CACHE_DIR=/nowhere" {
		t.Fatalf("variables:\n%s", out)
	}
	for _, l := range lines[:5] {
		_, dir, _ := strings.Cut(l, "=")
		if !strings.HasPrefix(dir, base+"/") {
			t.Errorf("%s is not in the cache %s", l, base)
		}
		if _, err := os.Stat(filepath.Join(dir, "written")); err != nil {
			t.Errorf("%s: what the command wrote is not on the host: %v", l, err)
		}
	}
	rt = runtimeWith(t, Config{})
	s = testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	if out := shell(t, s, `echo "${GOCACHE-unset} ${XDG_CACHE_HOME-unset} ${npm_config_cache-unset}"`); out != "unset unset unset\n" {
		t.Errorf("without a cache: %q", out)
	}
}

// TestToolCacheInRootUnused: a cache directory inside a root (the
// default one, for a root such as the home directory) is not used, and
// the result says why.
func TestToolCacheInRootUnused(t *testing.T) {
	root := t.TempDir()
	base := filepath.Join(root, ".cache", "capkit", "run-cache")
	rt := runtimeWith(t, Config{Cache: base})
	s := testkit.Session(t, rt, testkit.Grant(t, []string{root}, capability.RunShell))
	res, err := testkit.Call(t, s, "run_shell", map[string]any{"command": `echo "${GOCACHE-unset}"`})
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, res)
	if out := stdoutOf(res.Text); out != "unset\n" || !strings.Contains(strings.Join(r.Notes, "\n"), "no persistent tool cache: its directory") {
		t.Errorf("stdout %q, notes %q", out, r.Notes)
	}
}

// plantCache makes the cache of roots in base holding size bytes, last
// used at used.
func plantCache(t *testing.T, c *caches, roots []string, size int, used time.Time) string {
	t.Helper()
	u, _, err := c.acquire(roots, nil)
	if err != nil || u == nil {
		t.Fatal(err)
	}
	u.release()
	must(t, os.WriteFile(filepath.Join(u.tools, "xdg", "blob"), make([]byte, size), 0o600))
	dir := filepath.Dir(u.tools)
	must(t, os.Chtimes(filepath.Join(dir, cacheLock), used, used))
	return dir
}

// TestToolCacheBound: past the bound, whole caches are removed, the
// least recently used first, until the rest fits; at the bound nothing
// is; a cache in use is never removed; a cache is measured again only
// after limits.RunCacheTrimInterval.
func TestToolCacheBound(t *testing.T) {
	base := t.TempDir()
	c := &caches{base: base}
	now := time.Now()
	old := plantCache(t, c, []string{"/r/old"}, 300<<10, now.Add(-3*time.Hour))
	mid := plantCache(t, c, []string{"/r/mid"}, 300<<10, now.Add(-2*time.Hour))
	recent := plantCache(t, c, []string{"/r/recent"}, 300<<10, now.Add(-time.Hour))
	var total int64
	for _, d := range []string{old, mid, recent} {
		n, err := atfile.Usage(t.Context(), d)
		must(t, err)
		total += n
	}
	due := func() { must(t, os.Chtimes(filepath.Join(base, cacheStamp), now.Add(-time.Hour), now.Add(-time.Hour))) }
	exists := func(dir string) bool { _, err := os.Lstat(dir); return err == nil }

	c.bound = total
	if note := c.trimIfDue(t.Context()); note != "" || !exists(old) {
		t.Fatalf("at the bound: %q", note)
	}
	// Measured again only once the interval has passed.
	c.bound = total - 1
	if note := c.trimIfDue(t.Context()); note != "" || !exists(old) {
		t.Fatalf("measured within the interval: %q", note)
	}
	due()
	if note := c.trimIfDue(t.Context()); !strings.Contains(note, "the caches of 1 set(s) of roots were removed") || exists(old) || !exists(mid) {
		t.Fatalf("one byte past the bound: %q; old there: %v, mid there: %v", note, exists(old), exists(mid))
	}
	// In use, the least recently used cache stays; the next one goes.
	u, _, err := c.acquire([]string{"/r/mid"}, nil)
	must(t, err)
	must(t, os.Chtimes(filepath.Join(mid, cacheLock), now.Add(-2*time.Hour), now.Add(-2*time.Hour)))
	c.bound = 100 << 10
	due()
	note := c.trimIfDue(t.Context())
	u.release()
	if !exists(mid) || exists(recent) || !strings.Contains(note, "is in use") {
		t.Errorf("with mid in use: %q; mid there: %v, recent there: %v", note, exists(mid), exists(recent))
	}
	if left, _ := filepath.Glob(filepath.Join(base, cacheTrash+"*")); len(left) != 0 {
		t.Errorf("left being removed: %v", left)
	}
}

// TestToolCacheModuleCacheRemoved: a Go module cache's read-only
// directories do not keep a cache from being removed.
func TestToolCacheModuleCacheRemoved(t *testing.T) {
	base := t.TempDir()
	c := &caches{base: base}
	dir := plantCache(t, c, []string{"/r/a"}, 1<<10, time.Now())
	mod := filepath.Join(dir, cacheTools, "go-mod", "example.com", "m@v1.0.0")
	must(t, os.MkdirAll(mod, 0o755))
	must(t, os.WriteFile(filepath.Join(mod, "m.go"), []byte("package m\n"), 0o444))
	for _, d := range []string{mod, filepath.Dir(mod)} {
		must(t, os.Chmod(d, 0o555))
	}
	c.bound = 1
	if note := c.trimIfDue(t.Context()); !strings.Contains(note, "the caches of 1 set(s)") {
		t.Errorf("note %q", note)
	}
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("the cache is still there: %v", err)
	}
}
