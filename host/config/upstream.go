package config

// Other MCP servers whose tools capkit offers behind its kernel:
//
//	[upstream]                     # optional
//	lock = "capkit-lock.json"      # the approved tool definitions (capkit upstream approve); default: beside this file
//
//	[upstream.memory]              # a stdio server capkit starts; its tools are memory__TOOL
//	command = ["node", "/opt/mcp/server-memory/dist/index.js"]
//	env = { MEMORY_FILE_PATH = "/srv/agent/memory.json" }
//	secret_env = { API_TOKEN = "/run/secrets/memory-token" }  # file contents, never logged or shown
//	tools = ["create_*", "read_graph"]   # optional allow-list of the upstream's names (globs); default: every approved tool
//	contain = true                 # default: run it in capkit's container (run/sandbox)
//	roots = ["/srv/agent"]         # what the contained server may write (and read), besides the system
//	read_only = ["/opt/mcp"]       # what it may only read
//	network = "none"               # or a reviewed HTTP policy with "hosts": reached through capkit's proxy
//	share = "actor"                # one process per actor (default), "session", or "server"
//	dir = "/srv/agent"             # optional working directory (default: its first root)
//
//	[upstream.tracker]             # a Streamable HTTP server
//	url = "https://mcp.example.org/mcp"
//	policy = "tracker-http-policy.json"  # net/fetch's HTTP policy: dialled through the same destination guard
//	secret_headers = { Authorization = "/run/secrets/tracker-bearer" }
//
// An actor reaches an upstream's tools with the effect "upstream:NAME".

import (
	"os"
	"path"
	"slices"
	"strings"

	"github.com/capkit/capkit/capability"
)

// DefaultLockName is the lock file's name beside the configuration when
// [upstream] lock does not name one.
const DefaultLockName = "capkit-lock.json"

// The values of UpstreamConfig.Share.
const (
	ShareActor   = "actor"
	ShareSession = "session"
	ShareServer  = "server"
)

// UpstreamConfig is one [upstream.NAME] table. The [upstream] table's own
// key, lock, is decoded into the same map (as text: UnmarshalText) and
// taken out of it when the configuration is read.
type UpstreamConfig struct {
	Command       []string          `toml:"command"`
	Dir           string            `toml:"dir"`
	Env           map[string]string `toml:"env"`
	SecretEnv     map[string]string `toml:"secret_env"`
	Tools         []string          `toml:"tools"`
	Contain       *bool             `toml:"contain"`
	Roots         []string          `toml:"roots"`
	ReadOnly      []string          `toml:"read_only"`
	Network       string            `toml:"network"`
	Share         string            `toml:"share"`
	URL           string            `toml:"url"`
	Policy        string            `toml:"policy"`
	SecretHeaders map[string]string `toml:"secret_headers"`

	// text is set when the key held a string, not a table ([upstream]
	// lock = "...").
	text *string
}

// UnmarshalText takes a string where a table was expected: [upstream]'s
// lock key, or a mistake the validation names.
func (u *UpstreamConfig) UnmarshalText(b []byte) error {
	s := string(b)
	u.text = &s
	return nil
}

// Contained reports whether the upstream runs in capkit's container: a
// stdio server unless contain = false.
func (u UpstreamConfig) Contained() bool { return u.URL == "" && (u.Contain == nil || *u.Contain) }

// UpstreamNames lists the configured upstreams in name order.
func (c *Config) UpstreamNames() []string { return sortedKeys(c.Upstream) }

// LockFile is the upstream lock file: [upstream] lock, or
// DefaultLockName beside the configuration. Absolute once resolved.
func (c *Config) LockFile() string { return c.lockFile }

// validateUpstreams checks what needs no filesystem.
func (c *Config) validateUpstreams(errs *errorList) {
	if u, ok := c.Upstream["lock"]; ok {
		if u.text == nil {
			errs.add(c.Errorf("upstream.lock", "lock is [upstream]'s key naming the lock file, not an upstream's name"))
		} else {
			c.lockFile = *u.text
			if c.lockFile == "" || strings.ContainsRune(c.lockFile, 0) {
				errs.add(c.Errorf("upstream.lock", "empty path or NUL byte; remove the key for %s beside the configuration", DefaultLockName))
			}
		}
		delete(c.Upstream, "lock")
	}
	for _, name := range c.UpstreamNames() {
		u := c.Upstream[name]
		f := "upstream." + name
		switch {
		case u.text != nil:
			errs.add(c.Errorf(f, "[upstream] takes lock = \"FILE\" and [upstream.NAME] tables; %s is neither", name))
			continue
		case !capability.ValidUpstreamName(name):
			errs.add(c.Errorf(f, "upstream names are a lower-case letter, then lower-case letters, digits and '-', at most 32 bytes (no '_': its tools are NAME__TOOL)"))
		case (len(u.Command) > 0) == (u.URL != ""):
			errs.add(c.Errorf(f, "give either command (a stdio server capkit starts) or url (a Streamable HTTP server)"))
		}
		c.validateUpstream(errs, f, u)
	}
}

func (c *Config) validateUpstream(errs *errorList, f string, u UpstreamConfig) {
	if len(u.Command) > 0 && u.Command[0] == "" {
		errs.add(c.errAt(f+".command", 0, "empty program"))
	}
	if u.URL != "" {
		if u.Policy == "" {
			errs.add(c.Errorf(f+".url", "a url needs policy = \"FILE\": the HTTP policy it is dialled under"))
		}
		for _, k := range []string{"command", "dir", "env", "secret_env", "contain", "roots", "read_only", "network"} {
			if c.has(f + "." + k) {
				errs.add(c.Errorf(f+"."+k, "applies to a stdio server (command), not to a url"))
			}
		}
	} else {
		for _, k := range []string{"policy", "secret_headers"} {
			if c.has(f + "." + k) {
				errs.add(c.Errorf(f+"."+k, "applies to a url, not to a stdio server"))
			}
		}
	}
	if !u.Contained() {
		for _, k := range []string{"roots", "read_only", "network"} {
			if c.has(f + "." + k) {
				errs.add(c.Errorf(f+"."+k, "applies to a contained server; with contain = false it sees what capkit's user sees"))
			}
		}
	} else if len(u.Roots)+len(u.ReadOnly) == 0 {
		errs.add(c.Errorf(f, "a contained server needs roots or read_only: the directories it runs in (its program's, its data's)"))
	}
	for _, k := range sortedKeys(u.Env) {
		if !envNamePattern.MatchString(k) || strings.ContainsRune(u.Env[k], 0) {
			errs.add(c.Errorf(f+".env."+k, "not a settable variable (names match %s, values hold no NUL)", envNamePattern))
		}
	}
	for _, m := range []struct {
		key string
		m   map[string]string
	}{{"secret_env", u.SecretEnv}, {"secret_headers", u.SecretHeaders}} {
		for _, k := range sortedKeys(m.m) {
			if m.key == "secret_env" && !envNamePattern.MatchString(k) || m.key == "secret_headers" && !headerName(k) {
				errs.add(c.Errorf(f+"."+m.key+"."+k, "not a variable or header name"))
			}
			if m.m[k] == "" || strings.ContainsRune(m.m[k], 0) {
				errs.add(c.Errorf(f+"."+m.key+"."+k, "give the file holding the value"))
			}
		}
	}
	for i, g := range u.Tools {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			errs.add(c.errAt(f+".tools", i, "%q is not a glob of tool names", g))
		}
	}
	switch u.Share {
	case "", ShareActor, ShareSession, ShareServer:
	default:
		errs.add(c.Errorf(f+".share", "%q: want %q, %q or %q", u.Share, ShareActor, ShareSession, ShareServer))
	}
}

// headerName reports whether s is an HTTP header name (a token).
func headerName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 127 || !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// resolveUpstreams makes the upstreams' paths absolute and checks them,
// and protects the lock file (every tool and container keeps it
// read-only: a model that could write it could approve what it is
// offered).
func (c *Config) resolveUpstreams(errs *errorList) {
	if len(c.Upstream) == 0 && c.lockFile == "" {
		return
	}
	if c.lockFile == "" {
		c.lockFile = DefaultLockName
	}
	// A lock in a writable root (beside a capkit.toml there) is kept
	// read-only like the configuration.
	if abs, err := c.abs(c.lockFile); err == nil {
		c.lockFile = abs
		c.Run.protect = append(c.Run.protect, realPaths(abs)...)
	}
	for _, name := range c.UpstreamNames() {
		u := c.Upstream[name]
		f := "upstream." + name
		for _, d := range []struct {
			field string
			dirs  []string
		}{{f + ".roots", u.Roots}, {f + ".read_only", u.ReadOnly}} {
			for i, p := range d.dirs {
				dir, err := c.resolveDir(p)
				if err != nil {
					errs.add(c.errAt(d.field, i, "%s", err))
					continue
				}
				d.dirs[i] = dir
			}
		}
		if u.Dir != "" {
			dir, err := c.resolveDir(u.Dir)
			if err != nil {
				errs.add(c.Errorf(f+".dir", "%s", err))
			} else if u.Dir = dir; u.Contained() && !slices.ContainsFunc(slices.Concat(u.Roots, u.ReadOnly), func(r string) bool { return capability.Within(r, dir) }) {
				errs.add(c.Errorf(f+".dir", "%s lies in none of its roots", dir))
			}
		}
		for _, m := range []struct {
			key string
			m   map[string]string
		}{{"secret_env", u.SecretEnv}, {"secret_headers", u.SecretHeaders}} {
			for _, k := range sortedKeys(m.m) {
				abs, err := c.abs(m.m[k])
				if err != nil {
					errs.add(c.Errorf(f+"."+m.key+"."+k, "%s", err))
					continue
				}
				m.m[k] = abs
				if st, err := os.Stat(abs); err != nil || !st.Mode().IsRegular() {
					errs.add(c.Errorf(f+"."+m.key+"."+k, "%s is not a readable regular file", abs))
				}
				c.refuseWritable(errs, f+"."+m.key+"."+k, abs)
			}
		}
		if u.Network == "none" {
			u.Network = ""
		}
		for _, p := range []struct {
			field string
			path  *string
		}{{f + ".network", &u.Network}, {f + ".policy", &u.Policy}} {
			if *p.path == "" {
				continue
			}
			abs, err := c.abs(*p.path)
			if err != nil {
				errs.add(c.Errorf(p.field, "%s", err))
				continue
			}
			*p.path = abs
			c.refuseWritable(errs, p.field, abs)
		}
		c.Upstream[name] = u
	}
}

// Upstreams are the configured upstreams, resolved, in name order.
func (c *Config) Upstreams() []NamedUpstream {
	var out []NamedUpstream
	for _, name := range c.UpstreamNames() {
		out = append(out, NamedUpstream{Name: name, UpstreamConfig: c.Upstream[name]})
	}
	return out
}

// NamedUpstream is an upstream with its name.
type NamedUpstream struct {
	Name string
	UpstreamConfig
}

// UpstreamTool reports whether tool is named as a tool of a configured
// upstream (NAME__TOOL), and which upstream.
func (c *Config) UpstreamTool(tool string) (string, bool) {
	name, _, ok := strings.Cut(tool, "__")
	_, configured := c.Upstream[name]
	return name, ok && configured
}
