package config

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/run"
	"github.com/capkit/capkit/run/sandbox"
)

// RunConfig configures contained commands (run_shell, run_test,
// run_build; `capkit run` and `capkit test`):
//
//	[run]
//	containment = "required"      # optional: fail (unavailable) rather than run without namespaces; default "best_effort"
//	timeout = "2m"                # optional: a command's wall clock
//	max_output_bytes = 30000      # optional: what is kept of each of stdout and stderr
//	memory_bytes = 8589934592     # optional: address space of each process
//	processes = 1024              # optional: processes and threads of one command
//	milli_cpus = 1500             # optional: a command's CPU bandwidth in thousandths of a CPU (cgroup cpu.max, where delegated); default every CPU
//	file_bytes = 1073741824       # optional: the largest file a command may write
//	open_files = 1024             # optional
//	tmp_bytes = 536870912         # optional: the private /tmp
//	env = { GOFLAGS = "-mod=mod" } # optional: added to PATH, LANG, TERM, HOME, TMPDIR
//	protect = [".envrc"]          # optional: kept read-only in every writable root, with .git and capkit.toml
//	read_only = ["/opt/go"]       # optional: directories outside the roots shown read-only (toolchains)
//	writable = ["/srv/scratch"]   # optional: directories outside the roots shown read-write, that only contained commands use
//	cache = "none"                # optional: the base of the persistent tool caches, or "none"; default $XDG_CACHE_HOME/capkit/run-cache
//	cache_bytes = 21474836480     # optional: the bound of that base, every root's caches together
//	quarantine = "/var/lib/capkit/quarantine" # optional: where a protected path a command created is moved; outside every root; default $XDG_STATE_HOME/capkit/quarantine
//	network = "registry.json"     # optional: "none" (the default), or a reviewed HTTP policy (format 1, with "hosts"): commands reach those hosts through capkit's proxy
//	network_budget_policy = "b.json"   # optional BudgetPolicy: each proxied request admitted durably first
//	network_budget_root = "/var/lib/capkit/run-budget" # with network_budget_policy: its SQLite root, or
//	network_budget_store = "postgres://..."            #   a PostgreSQL store shared by many hosts
//	network_task = "builds"       # optional budget task; default: the session's actor ("cli" for capkit run and test)
//
//	[test]                        # the command run_test runs
//	command = ["go", "test", "./..."]
//	args = "-run=[A-Za-z0-9_/]+"  # optional: the pattern each extra argument must match in whole; default none allowed
//	dir = "."                     # optional: working directory relative to the root
//	timeout = "5m"                # optional
//	[test.variant.race]           # optional named variants, same keys
//	command = ["go", "test", "-race", "./..."]
//
//	[build]                       # the command run_build runs, same keys
//
// A writable directory is shared by every contained command, so anything
// one command writes there another one reads: never name a directory
// the host itself uses (its own Go build cache), or a command could
// plant what the host later runs. The tool caches are capkit's own, one
// per set of roots (package run); a cache directory that is, holds or
// lies in one of the host user's own tool caches is refused. The network
// policy and its budget are paths relative to the configuration file's
// directory, refused inside a writable root as [net]'s are.
type RunConfig struct {
	Containment    string            `toml:"containment"`
	Timeout        Duration          `toml:"timeout"`
	MaxOutputBytes int64             `toml:"max_output_bytes"`
	MemoryBytes    int64             `toml:"memory_bytes"`
	Processes      int64             `toml:"processes"`
	MilliCPUs      int64             `toml:"milli_cpus"`
	FileBytes      int64             `toml:"file_bytes"`
	OpenFiles      int64             `toml:"open_files"`
	TmpBytes       int64             `toml:"tmp_bytes"`
	Env            map[string]string `toml:"env"`
	Protect        []string          `toml:"protect"`
	ReadOnly       []string          `toml:"read_only"`
	Writable       []string          `toml:"writable"`
	// Cache is a string: a directory, or "none" (any so that the list
	// form of older configurations gets a message of its own).
	Cache      any    `toml:"cache"`
	CacheBytes int64  `toml:"cache_bytes"`
	Quarantine string `toml:"quarantine"`
	// Network is "none" or an HTTP policy file; its budget is optional.
	Network             string `toml:"network"`
	NetworkBudgetPolicy string `toml:"network_budget_policy"`
	NetworkBudgetRoot   string `toml:"network_budget_root"`
	NetworkBudgetStore  string `toml:"network_budget_store"`
	NetworkTask         string `toml:"network_task"`

	readOnly, writable []string // resolved
	cache              string   // resolved; "" : none
	quarantine         string
	// protect is Protect with the absolute entries and the configuration
	// file added as realPaths names them, as roots are named.
	protect []string
}

// CommandConfig is a declared command ([test], [build]) with its variants.
type CommandConfig struct {
	DeclaredCommand
	Variants map[string]DeclaredCommand `toml:"variant"`
}

// DeclaredCommand is one declared command.
type DeclaredCommand struct {
	Command []string `toml:"command"`
	Args    string   `toml:"args"`
	Dir     string   `toml:"dir"`
	Timeout Duration `toml:"timeout"`
}

// validateRun checks [run], [test] and [build].
func (c *Config) validateRun(errs *errorList) {
	r := c.Run
	if r.Containment != "" && r.Containment != "best_effort" && r.Containment != "required" {
		errs.add(c.Errorf("run.containment", "%q is neither \"best_effort\" nor \"required\"", r.Containment))
	}
	check := func(key string, v, least, hard int64) {
		f := "run." + key
		if (v == 0 && c.has(f)) || v < 0 || (v != 0 && v < least) || v > hard {
			errs.add(c.Errorf(f, "%d is outside %d..%d (remove the key for the default)", v, least, hard))
		}
	}
	check("max_output_bytes", r.MaxOutputBytes, limits.RunMinOutputBytes, limits.RunHardOutputBytes)
	check("memory_bytes", r.MemoryBytes, 1, limits.RunHardMemoryBytes)
	check("processes", r.Processes, limits.RunMinProcesses, limits.RunHardProcesses)
	check("milli_cpus", r.MilliCPUs, limits.RunMinMilliCPUs, limits.RunHardMilliCPUs)
	check("file_bytes", r.FileBytes, 1, limits.RunHardFileBytes)
	check("open_files", r.OpenFiles, 1, limits.RunHardOpenFiles)
	check("tmp_bytes", r.TmpBytes, 1, limits.RunHardTmpBytes)
	check("cache_bytes", r.CacheBytes, limits.RunMinCacheBytes, limits.RunHardCacheBytes)
	if s, ok := r.Cache.(string); r.Cache != nil && (!ok || s == "" || strings.ContainsRune(s, 0)) {
		errs.add(c.Errorf("run.cache", "give a directory, or \"none\" to run without persistent tool caches (extra writable directories are run.writable)"))
	}
	c.checkTimeout(errs, "run.timeout", r.Timeout)
	for _, k := range sortedKeys(r.Env) {
		if !envNamePattern.MatchString(k) || k == "HOME" || k == "TMPDIR" || strings.ContainsRune(r.Env[k], 0) {
			errs.add(c.Errorf("run.env."+k, "not a settable variable (names match %s; HOME and TMPDIR belong to the container)", envNamePattern))
		}
	}
	for i, p := range r.Protect {
		if p == "" || strings.ContainsRune(p, 0) || (!filepath.IsAbs(p) && (filepath.Clean(p) != p || p == "." || strings.HasPrefix(p, ".."))) {
			errs.add(c.errAt("run.protect", i, "%q is neither an absolute path nor a clean path inside a root", p))
		}
	}
	c.validateCommands(errs, "test", c.Test)
	c.validateCommands(errs, "build", c.Build)
}

func (c *Config) checkTimeout(errs *errorList, field string, t Duration) {
	if d := time.Duration(t); (d == 0 && c.has(field)) || d < 0 || d > limits.RunHardTimeout {
		errs.add(c.Errorf(field, "%v is outside (0, %v]", d, limits.RunHardTimeout))
	}
}

func (c *Config) validateCommands(errs *errorList, table string, cc CommandConfig) {
	if len(cc.Command) == 0 && len(cc.Variants) == 0 {
		if c.has(table) {
			errs.add(c.Errorf(table, "declares no command: give command = [\"program\", \"arg\", ...]"))
		}
		return
	}
	one := func(field string, d DeclaredCommand) {
		if len(d.Command) == 0 || d.Command[0] == "" {
			errs.add(c.Errorf(field+".command", "missing or empty: give the program and its arguments"))
		}
		if _, err := run.AnchoredPattern(d.Args); d.Args != "" && err != nil {
			errs.add(c.Errorf(field+".args", "%v", err))
		}
		if d.Dir != "" && (filepath.IsAbs(d.Dir) || strings.HasPrefix(filepath.Clean(d.Dir), "..")) {
			errs.add(c.Errorf(field+".dir", "%q must be relative to the root and stay inside it", d.Dir))
		}
		c.checkTimeout(errs, field+".timeout", d.Timeout)
	}
	if len(cc.Command) > 0 || c.has(table+".command") {
		one(table, cc.DeclaredCommand)
	}
	for _, name := range sortedKeys(cc.Variants) {
		if !toolNamePattern.MatchString(name) {
			errs.add(c.Errorf(table+".variant."+name, "variant names must match %s", toolNamePattern))
		}
		one(table+".variant."+name, cc.Variants[name])
	}
}

// resolveRun resolves [run]'s directories. A cache must not hold or lie
// in a root: a read-only root would become writable through it.
func (c *Config) resolveRun(errs *errorList) {
	r := &c.Run
	for _, f := range []struct {
		field string
		in    []string
		out   *[]string
	}{{"run.read_only", r.ReadOnly, &r.readOnly}, {"run.writable", r.Writable, &r.writable}} {
		for i, p := range f.in {
			dir, err := c.resolveDir(p)
			if err != nil {
				errs.add(c.errAt(f.field, i, "%s", err))
				continue
			}
			*f.out = append(*f.out, dir)
		}
	}
	for _, p := range r.Protect {
		if filepath.IsAbs(p) {
			r.protect = append(r.protect, realPaths(p)...)
		} else {
			r.protect = append(r.protect, p)
		}
	}
	if c.file != "" {
		if abs, err := filepath.Abs(c.file); err == nil {
			r.protect = append(r.protect, realPaths(abs)...)
		}
	}
	// A relative entry reached through a symlink in a root (.git linked
	// to a directory beside it) is protected where the link leads too:
	// the host's git and capkit follow it.
	for _, e := range capability.NewProtected(r.Protect...).Relative() {
		for _, root := range c.Roots {
			spelled := filepath.Join(root.Dir, e)
			for _, p := range realPaths(spelled) {
				if p != spelled {
					r.protect = append(r.protect, p)
				}
			}
		}
	}
	for i, d := range r.writable {
		for _, root := range c.Roots {
			if capability.Within(d, root.Dir) || capability.Within(root.Dir, d) {
				errs.add(c.errAt("run.writable", i, "%s holds or lies in root %s; it must be a directory of its own", d, root.Dir))
			}
		}
	}
	c.resolveCache(errs)
	c.resolveQuarantine(errs)
	c.resolveNetwork(errs)
}

// resolveNetwork checks [run]'s network keys and makes their paths
// absolute.
func (c *Config) resolveNetwork(errs *errorList) {
	r := &c.Run
	if r.Network == "none" {
		r.Network = ""
	}
	if r.Network == "" {
		for _, k := range []string{"network_budget_policy", "network_budget_root", "network_budget_store", "network_task"} {
			if c.has("run." + k) {
				errs.add(c.Errorf("run."+k, "needs run.network: a reviewed HTTP policy for the commands' network"))
			}
		}
		return
	}
	c.resolvePolicyPaths(errs, "run.network", &r.Network, budgetKeys{
		"run.network_budget_policy", "run.network_budget_root", "run.network_budget_store",
		&r.NetworkBudgetPolicy, &r.NetworkBudgetRoot, &r.NetworkBudgetStore,
	})
}

// RunNetwork is [run]'s network: the HTTP policy file ("" for none), its
// budget (policy file and locator, or none) and task.
type RunNetwork struct {
	Policy, BudgetPolicy, BudgetLocator, Task string
}

// RunNetwork is the resolved network of contained commands.
func (c *Config) RunNetwork() RunNetwork {
	r := c.Run
	return RunNetwork{Policy: r.Network, BudgetPolicy: r.NetworkBudgetPolicy, BudgetLocator: cmp.Or(r.NetworkBudgetStore, r.NetworkBudgetRoot), Task: r.NetworkTask}
}

// resolveCache resolves [run] cache: capkit's default base unless it
// names a directory (made on first use when missing) or "none". A named
// directory must lie outside every root and apart from the host user's
// own tool caches.
func (c *Config) resolveCache(errs *errorList) {
	r := &c.Run
	named, _ := r.Cache.(string)
	switch named {
	case "none":
		return
	case "":
		r.cache, _ = run.DefaultCacheDir() // none without a user cache directory
		return
	}
	abs, err := c.abs(named)
	if err != nil {
		errs.add(c.Errorf("run.cache", "%s", err))
		return
	}
	// Resolved as roots are; a missing one is made on first use.
	names := realPaths(abs)
	if st, err := os.Stat(abs); err == nil && !st.IsDir() {
		errs.add(c.Errorf("run.cache", "%s is not a directory", abs))
		return
	}
	for _, n := range names {
		if why := c.cacheConflict(n); why != "" {
			errs.add(c.Errorf("run.cache", "%s", why))
			return
		}
	}
	r.cache = names[len(names)-1]
}

// cacheConflict says why dir cannot hold the tool caches: it holds or
// lies in a root, or is, holds or lies in one of the host's own caches.
func (c *Config) cacheConflict(dir string) string {
	for _, root := range c.Roots {
		if capability.Within(dir, root.Dir) || capability.Within(root.Dir, dir) {
			return fmt.Sprintf("%s holds or lies in root %s; the tool caches must be a directory of their own", dir, root.Dir)
		}
	}
	for _, h := range hostCaches() {
		if capability.Within(dir, h.dir) || !h.holdOnly && capability.Within(h.dir, dir) {
			return fmt.Sprintf("%s is, holds or lies in the host's own %s (%s): what a command writes there would reach the host's builds; name a directory of capkit's own", dir, h.what, h.dir)
		}
	}
	return ""
}

// hostCache is one of the host user's own tool caches; holdOnly when a
// directory within it is fine (the user cache directory holds capkit's
// own).
type hostCache struct {
	what, dir string
	holdOnly  bool
}

// hostCaches are where the host user's tools keep their caches, as
// their environment or their defaults name them.
func hostCaches() []hostCache {
	var out []hostCache
	add := func(what, env string, def ...string) {
		dir := os.Getenv(env)
		if dir == "" && len(def) > 0 && def[0] != "" {
			dir = filepath.Join(def...)
		}
		if filepath.IsAbs(dir) {
			for _, d := range realPaths(filepath.Clean(dir)) {
				out = append(out, hostCache{what: what, dir: d})
			}
		}
	}
	home, _ := os.UserHomeDir()
	user, _ := os.UserCacheDir()
	gopath := filepath.Join(home, "go")
	if p := filepath.SplitList(os.Getenv("GOPATH")); len(p) > 0 && p[0] != "" {
		gopath = p[0]
	}
	add("Go build cache", "GOCACHE", user, "go-build")
	add("Go module cache", "GOMODCACHE", gopath, "pkg", "mod")
	add("npm cache", "npm_config_cache", home, ".npm")
	add("pip cache", "PIP_CACHE_DIR", user, "pip")
	add("Cargo home", "CARGO_HOME", home, ".cargo")
	if filepath.IsAbs(user) {
		for _, d := range realPaths(user) {
			out = append(out, hostCache{what: "user cache directory", dir: d, holdOnly: true})
		}
	}
	return out
}

// resolveQuarantine makes [run] quarantine absolute: it may not exist
// yet, and must lie in no root and hold none (what it keeps would be in
// the root again).
func (c *Config) resolveQuarantine(errs *errorList) {
	r := &c.Run
	if r.Quarantine == "" {
		return
	}
	abs, err := c.abs(r.Quarantine)
	if err != nil {
		errs.add(c.Errorf("run.quarantine", "%s", err))
		return
	}
	r.quarantine = realPaths(abs)[0]
	for _, root := range c.Roots {
		if capability.Within(root.Dir, r.quarantine) || capability.Within(r.quarantine, root.Dir) {
			errs.add(c.Errorf("run.quarantine", "%s holds or lies in root %s; the quarantine must be outside every root", r.quarantine, root.Dir))
		}
	}
}

// Protected is what no tool may change in a root: .git, capkit.toml, the
// [run] protect entries, this configuration file itself when it lies in
// a root, and the archive root ([archive] root) when it does. It knows
// every configured root, so a root nested in another or narrowed by a
// client keeps the protected paths of each.
func (c *Config) Protected() capability.Protected {
	roots := make([]string, len(c.Roots))
	for i, r := range c.Roots {
		roots[i] = r.Dir
	}
	return capability.NewProtected(slices.Concat(c.Run.protect, c.Archive.protect)...).WithRoots(roots...)
}

// RunOptions is the run package's configuration: the [run] settings, the
// declared commands, and the protected paths (Protected).
func (c *Config) RunOptions() run.Config {
	r := c.Run
	out := run.Config{
		RequireFull:    r.Containment == "required",
		Protected:      c.Protected(),
		ReadOnly:       slices.Clone(r.readOnly),
		Writable:       slices.Clone(r.writable),
		Cache:          r.cache,
		CacheBytes:     r.CacheBytes,
		Quarantine:     r.quarantine,
		MaxOutputBytes: int(r.MaxOutputBytes),
		Timeout:        time.Duration(r.Timeout),
		Limits: sandbox.Limits{MemoryBytes: r.MemoryBytes, Processes: r.Processes, FileBytes: r.FileBytes,
			OpenFiles: r.OpenFiles, TmpBytes: r.TmpBytes, MilliCPUs: r.MilliCPUs},
		Test:        commands(c.Test),
		Build:       commands(c.Build),
		NetworkTask: r.NetworkTask,
	}
	for _, k := range sortedKeys(r.Env) {
		out.Env = append(out.Env, k+"="+r.Env[k])
	}
	return out
}

// commands converts a validated [test] or [build] table.
func commands(cc CommandConfig) map[string]run.Command {
	if len(cc.Command) == 0 && len(cc.Variants) == 0 {
		return nil
	}
	out := map[string]run.Command{}
	conv := func(d DeclaredCommand) run.Command {
		cmd := run.Command{Argv: slices.Clone(d.Command), Dir: d.Dir, Timeout: time.Duration(d.Timeout)}
		if d.Args != "" {
			cmd.Args, _ = run.AnchoredPattern(d.Args)
		}
		return cmd
	}
	if len(cc.Command) > 0 {
		out[""] = conv(cc.DeclaredCommand)
	}
	for name, v := range cc.Variants {
		out[name] = conv(v)
	}
	return out
}
