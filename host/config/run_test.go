package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/limits"
)

func TestRunConfig(t *testing.T) {
	c, dir, err := parseCatalogDoc(t, `
[[root]]
path = "."
[run]
containment = "required"
timeout = "90s"
max_output_bytes = 1000
processes = 500
milli_cpus = 1500
env = { GOFLAGS = "-mod=mod", GOPROXY = "off" }
protect = [".envrc"]
read_only = ["/usr"]
[test]
command = ["go", "test", "./..."]
args = "-run=[A-Za-z]+"
timeout = "5m"
[test.variant.race]
command = ["go", "test", "-race", "./..."]
dir = "sub"
[build]
command = ["go", "build", "./..."]
`)
	if err != nil {
		t.Fatal(err)
	}
	o := c.RunOptions()
	if !o.RequireFull || o.Timeout != 90*time.Second || o.MaxOutputBytes != 1000 || o.Limits.Processes != 500 || o.Limits.MilliCPUs != 1500 ||
		!slices.Equal(o.Env, []string{"GOFLAGS=-mod=mod", "GOPROXY=off"}) || !slices.Equal(o.ReadOnly, []string{"/usr"}) ||
		!slices.Equal(o.Protected.Paths([]string{dir}), []string{
			filepath.Join(dir, ".git"), filepath.Join(dir, "capkit.toml"), filepath.Join(dir, ".envrc")}) {
		t.Errorf("%+v", o)
	}
	def, race := o.Test[""], o.Test["race"]
	if !slices.Equal(def.Argv, []string{"go", "test", "./..."}) || def.Timeout != 5*time.Minute ||
		!def.Args.MatchString("-run=Abc") || def.Args.MatchString("-run=Abc;x") ||
		race.Args != nil || race.Dir != "sub" || len(o.Build) != 1 {
		t.Errorf("test %+v race %+v build %+v", def, race, o.Build)
	}
	c, _, err = parseCatalogDoc(t, "")
	if err != nil {
		t.Fatal(err)
	}
	if o := c.RunOptions(); o.RequireFull || o.Test != nil || o.Build != nil {
		t.Errorf("defaults: %+v", o)
	}
}

func TestRunConfigErrors(t *testing.T) {
	cache := t.TempDir()
	cases := []struct{ doc, want string }{
		{"[run]\ncontainment = \"strict\"", "capkit.toml:2: run.containment"},
		{fmt.Sprintf("[run]\nprocesses = %d", limits.RunMinProcesses-1), "capkit.toml:2: run.processes"},
		{fmt.Sprintf("[run]\nprocesses = %d", limits.RunHardProcesses+1), "capkit.toml:2: run.processes"},
		{fmt.Sprintf("[run]\nmax_output_bytes = %d", limits.RunMinOutputBytes-1), "capkit.toml:2: run.max_output_bytes"},
		{fmt.Sprintf("[run]\nmax_output_bytes = %d", limits.RunHardOutputBytes+1), "capkit.toml:2: run.max_output_bytes"},
		{"[run]\nmemory_bytes = 0", "capkit.toml:2: run.memory_bytes"},
		{fmt.Sprintf("[run]\nmilli_cpus = %d", limits.RunMinMilliCPUs-1), "capkit.toml:2: run.milli_cpus"},
		{fmt.Sprintf("[run]\nmilli_cpus = %d", limits.RunHardMilliCPUs+1), "capkit.toml:2: run.milli_cpus"},
		{"[run]\ntimeout = \"11m\"", "capkit.toml:2: run.timeout"},
		{"[run]\nenv = { HOME = \"/root\" }", "run.env.HOME"},
		{"[run]\nprotect = [\"../x\"]", "capkit.toml:2: run.protect"},
		{"[run]\nread_only = [\"missing-dir\"]", "run.read_only"},
		{"[[root]]\npath = \".\"\n[run]\nwritable = [\".\"]", "run.writable"},
		{"[run]\ncache = [\"/var/cache/x\"]", "capkit.toml:2: run.cache: give a directory, or \"none\""},
		{"[run]\ncache = \"\"", "capkit.toml:2: run.cache"},
		{"[[root]]\npath = \".\"\n[run]\ncache = \"sub/cache\"", "holds or lies in root"},
		{"[run]\ncache = \"notes.txt\"", "is not a directory"},
		{fmt.Sprintf("[run]\ncache_bytes = %d", limits.RunMinCacheBytes-1), "capkit.toml:2: run.cache_bytes"},
		{fmt.Sprintf("[run]\ncache_bytes = %d", limits.RunHardCacheBytes+1), "capkit.toml:2: run.cache_bytes"},
		{"[[root]]\npath = \".\"\n[run]\nquarantine = \"state/q\"", "run.quarantine"},
		{"[[root]]\npath = \".\"\n[run]\nquarantine = \"..\"", "run.quarantine"},
		{"[test]\nargs = \"x\"", "test.command"},
		{"[test]\ncommand = [\"go\"]\nargs = \"(\"", "test.args"},
		{"[test]\ncommand = [\"go\"]\ndir = \"../x\"", "test.dir"},
		{"[test.variant.Bad]\ncommand = [\"go\"]", "test.variant.Bad"},
		{"[build]\ncommand = []", "build"},
		{"[test]\ncomand = [\"go\"]", "unknown key"},
	}
	for _, c := range cases {
		t.Run(c.want, func(t *testing.T) {
			_, _, err := parseCatalogDoc(t, c.doc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want %q", err, c.want)
			}
		})
	}
	// At the edges the values are accepted.
	for _, doc := range []string{
		fmt.Sprintf("[run]\nprocesses = %d\nmax_output_bytes = %d\nmilli_cpus = %d", limits.RunMinProcesses, limits.RunMinOutputBytes, limits.RunMinMilliCPUs),
		fmt.Sprintf("[run]\nprocesses = %d\nmax_output_bytes = %d\ntimeout = \"10m\"\nmilli_cpus = %d", limits.RunHardProcesses, limits.RunHardOutputBytes, limits.RunHardMilliCPUs),
		"[run]\nwritable = [\"" + cache + "\"]",
		fmt.Sprintf("[run]\ncache_bytes = %d", limits.RunMinCacheBytes),
		fmt.Sprintf("[run]\ncache_bytes = %d", limits.RunHardCacheBytes),
		"[[root]]\npath = \".\"\n[run]\nquarantine = \"" + cache + "/not-yet\"",
	} {
		if _, _, err := parseCatalogDoc(t, doc); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
}

// TestProtectedThroughSymlinks loads a configuration by a path through a
// symlinked directory (the working directory a host was started from),
// with absolute [run] protect entries spelled through it and through a
// symlink inside the root, and relative entries (.git among them)
// reached through symlinks in the root: each is protected where it lies
// on disk, where roots are named, whether or not it exists yet.
func TestProtectedThroughSymlinks(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	for _, d := range []string{"conf", "tools", "gitdata"} {
		if err := os.MkdirAll(filepath.Join(real, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []struct{ target, at string }{
		{"real", link}, {"secret.sh", filepath.Join(real, "alias.sh")},
		{"tools", filepath.Join(real, "scripts")}, {"gitdata", filepath.Join(real, ".git")},
	} {
		if err := os.Symlink(l.target, l.at); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(real, "secret.sh"), []byte("echo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	doc := fmt.Sprintf("[[root]]\npath = \"..\"\n[run]\nprotect = [%q, %q, \"scripts/deploy.sh\"]\n", filepath.Join(link, "alias.sh"), filepath.Join(link, "missing", "new.sh"))
	name := filepath.Join(link, "conf", "app.toml")
	if err := os.WriteFile(name, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join(link, "conf"))
	c, err := Load("app.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := c.Protected()
	roots := []string{real}
	for name, refused := range map[string]bool{
		"conf/app.toml": true, "alias.sh": true, "secret.sh": true, "missing/new.sh": true,
		"scripts/deploy.sh": true, "tools/deploy.sh": true, ".git/config": true, "gitdata/hooks/pre-commit": true,
		"conf/other.toml": false, "other.sh": false, "tools/other.sh": false,
	} {
		target := filepath.Join(real, name)
		if got := slices.ContainsFunc(p.Every(roots), func(q string) bool { return capability.WithinFolded(q, target) }); got != refused {
			t.Errorf("%s protected: %v, want %v", name, got, refused)
		}
	}
}

// TestRunCache: the persistent tool caches are on by default, in
// capkit's own directory of the user's cache directory; "none" turns them
// off; a directory named is used (made on first use when missing), but
// never one of the host user's own caches, nor one holding them.
func TestRunCache(t *testing.T) {
	user := t.TempDir()
	t.Setenv("XDG_CACHE_HOME", user)
	t.Setenv("GOCACHE", "")
	mine := filepath.Join(t.TempDir(), "capkit-cache")
	for _, tc := range []struct{ doc, want, err string }{
		{"", filepath.Join(user, "capkit", "run-cache"), ""},
		{"[run]\ncache = \"none\"", "", ""},
		{"[run]\ncache = \"" + mine + "\"", mine, ""},
		{"[run]\ncache = \"" + filepath.Join(user, "go-build") + "\"", "", "the host's own Go build cache"},
		{"[run]\ncache = \"" + filepath.Join(user, "go-build", "sub") + "\"", "", "the host's own Go build cache"},
		{"[run]\ncache = \"" + user + "\"", "", "the host's own"},
		{"[run]\ncache = \"" + filepath.Dir(user) + "\"", "", "the host's own"},
	} {
		c, _, err := parseCatalogDoc(t, tc.doc)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.doc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.doc, err)
		}
		if got := c.RunOptions().Cache; got != tc.want {
			t.Errorf("%q: cache %q, want %q", tc.doc, got, tc.want)
		}
	}
	// The host's GOCACHE as its environment names it.
	host := t.TempDir()
	t.Setenv("GOCACHE", host)
	if _, _, err := parseCatalogDoc(t, "[run]\ncache = \""+host+"\""); err == nil || !strings.Contains(err.Error(), "Go build cache") {
		t.Errorf("the host's $GOCACHE: %v", err)
	}
	c, _, err := parseCatalogDoc(t, "[run]\ncache_bytes = 300000000")
	if err != nil || c.RunOptions().CacheBytes != 300000000 {
		t.Errorf("cache_bytes: %v", err)
	}
}

// TestRunNetworkConfig: [run] network is "none" by default or a policy
// file with an optional budget, its paths resolved against the
// configuration's directory and refused inside a writable root; budget
// keys without a network, or a budget without exactly one store, are
// refused. [net] shares those rules.
func TestRunNetworkConfig(t *testing.T) {
	dir := tree(t)
	for _, c := range []struct {
		doc  string
		want RunNetwork
		errs []string
	}{
		{roots, RunNetwork{}, nil},
		{roots + "[run]\nnetwork = \"none\"\n", RunNetwork{}, nil},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_task = \"builds\"\n",
			RunNetwork{Policy: filepath.Join(dir, "registry.json"), Task: "builds"}, nil},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_budget_policy = \"b.json\"\nnetwork_budget_root = \"budget\"\n",
			RunNetwork{Policy: filepath.Join(dir, "registry.json"), BudgetPolicy: filepath.Join(dir, "b.json"), BudgetLocator: filepath.Join(dir, "budget")}, nil},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_budget_policy = \"b.json\"\nnetwork_budget_store = \"postgres://db.example.org/b\"\n",
			RunNetwork{Policy: filepath.Join(dir, "registry.json"), BudgetPolicy: filepath.Join(dir, "b.json"), BudgetLocator: "postgres://db.example.org/b"}, nil},
		{roots + "[run]\nnetwork = \"rw/registry.json\"\n", RunNetwork{}, []string{"run.network", "inside writable root"}},
		{roots + "[run]\nnetwork = \"ro/registry.json\"\n", RunNetwork{Policy: filepath.Join(dir, "ro/registry.json")}, nil},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_budget_policy = \"rw/b.json\"\nnetwork_budget_root = \"budget\"\n", RunNetwork{}, []string{"run.network_budget_policy", "inside writable root"}},
		{roots + "[run]\nnetwork_budget_policy = \"b.json\"\n", RunNetwork{}, []string{"run.network_budget_policy", "needs run.network"}},
		{roots + "[run]\nnetwork_task = \"t\"\n", RunNetwork{}, []string{"run.network_task", "needs run.network"}},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_budget_policy = \"b.json\"\n", RunNetwork{}, []string{"run.network_budget_policy", "exactly one of network_budget_root or network_budget_store"}},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_budget_root = \"budget\"\n", RunNetwork{}, []string{"run.network_budget_policy", "need a budget policy"}},
		{roots + "[run]\nnetwork = \"registry.json\"\nnetwork_budget_policy = \"b.json\"\nnetwork_budget_store = \"mysql://x\"\n", RunNetwork{}, []string{"run.network_budget_store", "postgres://"}},
		{roots + "[net]\nhttp_policy = \"h.json\"\nbudget_policy = \"b.json\"\n", RunNetwork{}, []string{"net.budget_policy", "exactly one of budget_root or budget_store"}},
		{roots + "[net]\nhttp_policy = \"rw/h.json\"\n", RunNetwork{}, []string{"net.http_policy", "inside writable root"}},
	} {
		cfg, err := parseIn(t, dir, c.doc)
		if len(c.errs) > 0 {
			if err == nil {
				t.Errorf("%s: accepted", c.doc)
				continue
			}
			for _, w := range c.errs {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: %v, want it to mention %q", c.doc, err, w)
				}
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.doc, err)
			continue
		}
		if got := cfg.RunNetwork(); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.doc, got, c.want)
		}
		if got := cfg.RunOptions().NetworkTask; got != c.want.Task {
			t.Errorf("%s: task %q", c.doc, got)
		}
	}
}
