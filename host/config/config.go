// Package config reads capkit's configuration: the roots a model may work
// in, the actors MCP sessions and CLI calls run as and the capabilities they
// hold, per-tool policies, and the audit and detail logs. It is TOML,
// decoded strictly (an unknown key is an error), and every error names the
// file, line and field:
//
//	capkit.toml:12: actor.assistant.effects: unknown effect "fly"
//
// The format (examples/capkit.toml is a complete, commented example):
//
//	audit_log = "/var/log/capkit/audit.jsonl"   # optional: the hash-chained audit trail, one record per event
//	audit_store = "postgres://host/db"          # optional: the trail in a PostgreSQL store too (see audit.go)
//	log = "/var/log/capkit/capkit.log"          # optional: the trusted detail log
//	client_roots = "narrow"        # optional: MCP clients' roots (roots/list) narrow the roots below; default "ignore"
//
//	[[root]]                       # one per directory; at least one for file tools
//	path = "/home/me/project"      # absolute, or relative to the configuration file's directory
//	read_only = false              # true: only the reading effects apply here
//
//	[actor.assistant]              # an actor; sessions run as one (serve --actor NAME)
//	effects = ["read_file", "write_file", "edit_file", "move_file", "list", "search", "tool_search"]
//	roots = ["/home/me/project"]   # optional scope; default: every root
//	resources = []                 # optional opaque resources (catalog names, ...)
//
//	[tool.read_file]               # optional per-tool policy; absent keys keep the tool's own
//	max_calls = 500                # calls per session
//	max_input_bytes = 65536        # encoded arguments of one call
//	max_output_bytes = 8388608     # result of one call (never truncated: a larger one fails)
//	timeout = "30s"
//	max_concurrent = 64            # calls of the tool running at once, every session together
//	[tool.write_file.provenance]   # optional per-argument provenance rules (provenance.go)
//
//	[catalog.release_notes]        # a fixed-file catalog served as the tool release_notes
//	[script]                       # run_script settings
//	[provenance]                   # labels on script values, policies at their effectful calls (provenance.go)
//	[http]                         # serve --http bounds and per-actor tokens (see http.go)
//	[net]                          # net_fetch's policy and budget (see net.go)
//	[run] [test] [build]           # contained commands (run.go)
//	[semindex]                     # the semantic index's model (see semindex.go)
//	[archive]                      # the text archive's root and fetch source (see archive.go)
//	[telemetry]                    # OpenTelemetry over OTLP/HTTP (see audit.go)
//	[upstream] [upstream.NAME]     # other MCP servers' tools behind the kernel (upstream.go)
//
// How grants are derived. Effects that only read (capability.Effect.ReadOnly)
// apply to every root in the actor's scope; the others apply to its
// writable roots only, so a read-only root is never written through any
// tool, and granting write_file, edit_file or move_file to an actor whose
// roots are all read-only is an error. Without effects, an actor gets the
// file effects (read_file, write_file, edit_file, move_file, list, search)
// when its scope has a writable root, the reading ones (read_file, list,
// search) when it has only read-only roots, and tool_search. Relative paths
// in tool arguments start at the first writable root of the scope (or the
// first root when all are read-only), in configuration order.
//
// Without a configuration file, FromFlags builds the same Config from
// serve's --root and --read-only directories, with one actor, "assistant",
// holding the default grants and every tool on its own default policy.
//
// Roots are resolved when the configuration is read: made absolute,
// symlinks evaluated, and required to be existing directories. Two roots
// naming the same directory, and a read-only root inside a writable one
// (which would be writable through it), are errors, as are log files inside
// a writable root (a model could rewrite its own audit trail).
//
// This package is written by hand around go-toml/v2: the decoder gives
// positions for syntax, type and unknown-key errors; locate.go finds the
// lines of keys for the semantic checks here, from go-toml's parser.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/toolname"
	"github.com/capkit/capkit/limits"
)

// DefaultActor is the actor of a configuration without actors, and the one
// chosen when several are configured and none is named.
const DefaultActor = "assistant"

// The values of Config.ClientRoots.
const (
	ClientRootsIgnore = "ignore"
	ClientRootsNarrow = "narrow"
)

// Config is a validated configuration. Values returned by Load, Parse and
// FromFlags have their roots resolved.
type Config struct {
	// AuditLog is the file receiving one JSON line per tool call; empty
	// disables auditing. Absolute once resolved.
	AuditLog string `toml:"audit_log"`
	// AuditMaxBytes is the size past which AuditLog is rotated; zero
	// means limits.AuditDefaultMaxFileBytes (see audit.go).
	AuditMaxBytes int64 `toml:"audit_max_bytes"`
	// AuditStore is a PostgreSQL URL the audit trail is also written to,
	// shared by many hosts; AuditSpool the directory where its events
	// wait while it is unreachable, at most AuditSpoolMaxBytes (see
	// audit.go).
	AuditStore         string `toml:"audit_store"`
	AuditSpool         string `toml:"audit_spool"`
	AuditSpoolMaxBytes int64  `toml:"audit_spool_max_bytes"`
	// Telemetry exports calls to OpenTelemetry (see audit.go).
	Telemetry TelemetryConfig `toml:"telemetry"`
	// Log is the host's trusted detail log (JSON lines); empty leaves the
	// choice to the caller. Absolute once resolved.
	Log string `toml:"log"`
	// ClientRoots says what an MCP client's own roots (roots/list) do:
	// ClientRootsIgnore (the default, also "") leaves them unasked;
	// ClientRootsNarrow lets them narrow each session's roots to where
	// both meet, never beyond the roots configured here.
	ClientRoots string `toml:"client_roots"`
	// Roots are the directories file tools may reach.
	Roots []Root `toml:"root"`
	// Actors by name. Empty means one actor, DefaultActor, with the
	// default grants on every root.
	Actors map[string]Actor `toml:"actor"`
	// Tools are per-tool policy overrides by tool name.
	Tools map[string]ToolPolicy `toml:"tool"`
	// Catalogs are fixed-file catalogs by tool name (see catalog.go).
	Catalogs map[string]CatalogConfig `toml:"catalog"`
	// Script configures run_script (see script.go).
	Script ScriptConfig `toml:"script"`
	// Provenance labels script values and decides their effectful calls
	// (see provenance.go).
	Provenance ProvenanceConfig `toml:"provenance"`
	// HTTP bounds serve --http (see http.go).
	HTTP HTTPConfig `toml:"http"`
	// Net configures net_fetch and its budget (see net.go).
	Net NetConfig `toml:"net"`
	// Run, Test and Build configure contained commands (see run.go).
	Run   RunConfig     `toml:"run"`
	Test  CommandConfig `toml:"test"`
	Build CommandConfig `toml:"build"`
	// Semindex names the semantic index's model (see semindex.go).
	Semindex SemindexConfig `toml:"semindex"`
	// Archive names the text archive's root and source (see archive.go).
	Archive ArchiveConfig `toml:"archive"`
	// Upstream are other MCP servers whose tools are offered behind the
	// kernel, by name (see upstream.go).
	Upstream map[string]UpstreamConfig `toml:"upstream"`

	// lockFile is the upstream lock file (LockFile).
	lockFile string

	file string // name in messages; empty for flags
	dir  string // base of relative paths
	loc  *locator
	// scopes are each actor's roots, resolved: indexes into Roots.
	scopes map[string][]int
}

// Root is a directory file tools may reach.
type Root struct {
	Path     string `toml:"path"`
	ReadOnly bool   `toml:"read_only"`
	// Dir is Path made absolute with symlinks evaluated: the root the
	// capabilities name.
	Dir string `toml:"-"`

	field string // how errors name it: "root[0].path" or "--root"
}

// Actor is what sessions running as one actor hold.
type Actor struct {
	// Effects granted; nil means the defaults (see the package comment),
	// empty means none.
	Effects []capability.Effect `toml:"effects"`
	// Roots is the actor's scope: paths of configured roots. Nil means
	// every root.
	Roots []string `toml:"roots"`
	// Resources are opaque names (catalogs, indexes) the effects also
	// apply to.
	Resources []string `toml:"resources"`
}

// ToolPolicy overrides fields of a tool's policy; zero fields keep the
// tool's own values.
type ToolPolicy struct {
	MaxCalls       int      `toml:"max_calls"`
	MaxInputBytes  int64    `toml:"max_input_bytes"`
	MaxOutputBytes int64    `toml:"max_output_bytes"`
	Timeout        Duration `toml:"timeout"`
	MaxConcurrent  int      `toml:"max_concurrent"`
	// Provenance are the tool's per-argument provenance rules (see
	// provenance.go): argument name → "trusted", "any" or a readers table.
	Provenance map[string]any `toml:"provenance"`
}

// Duration is a time.Duration written as a string: "30s", "2m".
type Duration time.Duration

// UnmarshalText parses a duration such as "30s".
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return fmt.Errorf("invalid duration %q: write a number and a unit, e.g. \"30s\" or \"2m\"", b)
	}
	*d = Duration(v)
	return nil
}

// MarshalText writes the duration as time.Duration.String does.
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// fileEffects are the defaults on a writable root; readEffects on a
// read-only one. Both include parse: the document readers (JSON, CSV, HTML,
// feeds) read only what read_file may read, and are deferred until
// tool_search finds them.
var (
	fileEffects = []capability.Effect{capability.ReadFile, capability.WriteFile, capability.EditFile,
		capability.MoveFile, capability.List, capability.Search, capability.Parse}
	readEffects = []capability.Effect{capability.ReadFile, capability.List, capability.Search, capability.Parse}
)

// Load reads, validates and resolves the configuration file at path.
// Content errors are *Error values (several joined by errors.Join; see
// Errors); a file that cannot be read is a *fault.Error.
func Load(path string) (*Config, error) {
	// Non-blocking, so a FIFO at path is refused below instead of hanging.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), err, "configuration file %s cannot be opened", path)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fault.Wrap(fault.IO, err, "configuration file %s cannot be read", path)
	} else if !st.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "configuration file %s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limits.ConfigMaxBytes+1))
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "configuration file %s cannot be read", path)
	}
	if len(data) > limits.ConfigMaxBytes {
		return nil, fault.LimitExceeded("configuration file "+path+" bytes", limits.ConfigMaxBytes, 0)
	}
	return Parse(path, data)
}

// Parse decodes, validates and resolves a configuration. name is how
// errors name the file; relative paths in it are relative to name's
// directory.
func Parse(name string, data []byte) (*Config, error) {
	c := &Config{file: name, dir: filepath.Dir(name)}
	dec := toml.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, decodeErrors(name, err)
	}
	c.loc = locate(data)
	for i := range c.Roots {
		c.Roots[i].field = fmt.Sprintf("root[%d].path", i)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	return c, nil
}

// FromFlags builds the configuration serve uses without a file: writable
// roots, read-only roots (relative to the working directory), one actor
// with the default grants, default policies. At least one root is
// required.
func FromFlags(roots, readOnly []string) (*Config, error) {
	if len(roots)+len(readOnly) == 0 {
		return nil, &Error{Field: "--root", Message: "give at least one --root or --read-only directory, or a --config file"}
	}
	c := &Config{}
	for _, r := range roots {
		c.Roots = append(c.Roots, Root{Path: r, field: "--root " + r})
	}
	for _, r := range readOnly {
		c.Roots = append(c.Roots, Root{Path: r, ReadOnly: true, field: "--read-only " + r})
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	if err := c.resolve(); err != nil {
		return nil, err
	}
	return c, nil
}

// File is the configuration file's name as given, or "" for flags.
func (c *Config) File() string { return c.file }

// Errorf returns an Error about field (a dotted path as Error describes),
// located at the field's line, or its nearest enclosing table's.
func (c *Config) Errorf(field, format string, args ...any) *Error {
	e := &Error{File: c.file, Field: field, Message: fmt.Sprintf(format, args...)}
	if c.loc != nil {
		e.Line = c.loc.line(field)
	}
	return e
}

// errAt is Errorf for an element of field: the line is the element's, the
// field named is the whole key.
func (c *Config) errAt(field string, index int, format string, args ...any) *Error {
	e := c.Errorf(fmt.Sprintf("%s[%d]", field, index), format, args...)
	e.Field = field
	return e
}

// has reports whether field was written in the file.
func (c *Config) has(field string) bool {
	if c.loc == nil {
		return false
	}
	_, ok := c.loc.lines[field]
	return ok
}

// validate checks what needs no filesystem.
func (c *Config) validate() error {
	var errs errorList
	for _, f := range []struct{ field, path string }{{"audit_log", c.AuditLog}, {"log", c.Log}} {
		if c.has(f.field) && f.path == "" {
			errs.add(c.Errorf(f.field, "empty path; remove the key to disable it"))
		} else if strings.ContainsRune(f.path, 0) {
			errs.add(c.Errorf(f.field, "path contains a NUL byte"))
		}
	}
	switch c.ClientRoots {
	case "", ClientRootsIgnore, ClientRootsNarrow:
	default:
		errs.add(c.Errorf("client_roots", "%q: want %q or %q", c.ClientRoots, ClientRootsIgnore, ClientRootsNarrow))
	}
	for _, r := range c.Roots {
		switch {
		case r.Path == "":
			errs.add(c.Errorf(r.field, "missing or empty: give the directory"))
		case strings.ContainsRune(r.Path, 0):
			errs.add(c.Errorf(r.field, "path contains a NUL byte"))
		}
	}
	for _, name := range sortedKeys(c.Actors) {
		a := c.Actors[name]
		field := "actor." + name
		if !actorNamePattern.MatchString(name) {
			errs.add(c.Errorf(field, "actor names must match %s", actorNamePattern))
		}
		for i, e := range a.Effects {
			if up, ok := e.Upstream(); ok {
				if _, configured := c.Upstream[up]; !configured {
					errs.add(c.errAt(field+".effects", i, "%q names no configured upstream (an [upstream.%s] table)", e, up))
				}
			} else if !e.Valid() {
				errs.add(c.errAt(field+".effects", i, "unknown effect %q (known: %s)", e, effectList()))
			}
		}
		for i, r := range a.Roots {
			if r == "" || strings.ContainsRune(r, 0) {
				errs.add(c.errAt(field+".roots", i, "empty path or NUL byte"))
			}
		}
		for i, r := range a.Resources {
			if !resourcePattern.MatchString(r) {
				errs.add(c.errAt(field+".resources", i, "resource %q must match %s", r, resourcePattern))
			}
		}
	}
	for _, name := range sortedKeys(c.Tools) {
		c.validateTool(&errs, name, c.Tools[name])
	}
	c.validateCatalogs(&errs)
	c.validateScript(&errs)
	c.validateProvenance(&errs)
	c.validateHTTP(&errs)
	c.validateRun(&errs)
	c.validateSemindex(&errs)
	c.validateUpstreams(&errs)
	return errs.err()
}

func (c *Config) validateTool(errs *errorList, name string, t ToolPolicy) {
	field := "tool." + name
	if _, upstream := c.UpstreamTool(name); upstream && !toolname.ValidExternal(name) {
		errs.add(c.Errorf(field, "an upstream tool's name is a letter, then letters, digits, '_' and '-', at most 64 bytes"))
	} else if !upstream && !toolNamePattern.MatchString(name) {
		errs.add(c.Errorf(field, "tool names must match %s", toolNamePattern))
	}
	check := func(key string, v, hard int64) {
		f := field + "." + key
		if (v == 0 && c.has(f)) || v < 0 || v > hard {
			errs.add(c.Errorf(f, "%d is outside 1..%d (remove the key for the tool's default)", v, hard))
		}
	}
	check("max_calls", int64(t.MaxCalls), limits.HardMaxCalls)
	check("max_input_bytes", t.MaxInputBytes, limits.HardMaxInputBytes)
	check("max_output_bytes", t.MaxOutputBytes, limits.HardMaxOutputBytes)
	check("max_concurrent", int64(t.MaxConcurrent), limits.HardMaxConcurrent)
	if d := time.Duration(t.Timeout); (d == 0 && c.has(field+".timeout")) || d < 0 || d > limits.HardMaxTimeout {
		errs.add(c.Errorf(field+".timeout", "%v is outside (0, %v]", d, limits.HardMaxTimeout))
	}
}

// resolve turns paths into absolute, symlink-free ones and checks what the
// filesystem decides.
func (c *Config) resolve() error {
	var errs errorList
	for i := range c.Roots {
		r := &c.Roots[i]
		dir, err := c.resolveDir(r.Path)
		if err != nil {
			errs.add(c.Errorf(r.field, "%s", err))
			continue
		}
		r.Dir = dir
	}
	if len(errs) > 0 {
		return errs.err()
	}
	for i, r := range c.Roots {
		for j, o := range c.Roots[:i] {
			switch {
			case r.Dir == o.Dir:
				errs.add(c.Errorf(r.field, "%s is the same directory as %s", r.Dir, o.field))
			case r.ReadOnly && !o.ReadOnly && capability.Within(o.Dir, r.Dir),
				o.ReadOnly && !r.ReadOnly && capability.Within(r.Dir, o.Dir):
				ro, rw := r, o
				if o.ReadOnly {
					ro, rw = o, r
				}
				errs.add(c.Errorf(c.Roots[max(i, j)].field, "read-only root %s lies inside writable root %s, so it would be writable through it", ro.Dir, rw.Dir))
			}
		}
	}
	c.resolveLogs(&errs)
	c.resolveAudit(&errs)
	c.resolveNet(&errs)
	c.resolveArchive(&errs)
	c.resolveHTTP(&errs)
	c.resolveRun(&errs)
	c.resolveUpstreams(&errs)
	c.scopes = map[string][]int{}
	for _, name := range sortedKeys(c.Actors) {
		c.resolveActor(&errs, name, c.Actors[name])
	}
	return errs.err()
}

// resolveDir makes p absolute (relative to the configuration's directory)
// and evaluates its symlinks; it must be a directory.
func (c *Config) resolveDir(p string) (string, error) {
	abs, err := c.abs(p)
	if err != nil {
		return "", err
	}
	dir, err := filepath.EvalSymlinks(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("%s does not exist", abs)
		}
		return "", fmt.Errorf("%s cannot be resolved: %v", abs, err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("%s cannot be read: %v", abs, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", abs)
	}
	return dir, nil
}

func (c *Config) abs(p string) (string, error) {
	if !filepath.IsAbs(p) {
		p = filepath.Join(c.dir, p)
	}
	return filepath.Abs(p)
}

// realPaths are the names the file at abs has once symlinks are
// resolved, as roots are: its deepest existing directory resolved
// followed by the rest of abs (the file need not exist yet), and, when
// abs is itself a symlink, what it leads to. A path compared with a root
// by name is only found inside it this way.
func realPaths(abs string) []string {
	dir, rest := filepath.Dir(abs), filepath.Base(abs)
	for {
		if d, err := filepath.EvalSymlinks(dir); err == nil {
			out := []string{filepath.Join(d, rest)}
			if full, err := filepath.EvalSymlinks(abs); err == nil && full != out[0] {
				out = append(out, full)
			}
			return out
		}
		up := filepath.Dir(dir)
		if up == dir {
			return []string{abs}
		}
		dir, rest = up, filepath.Join(filepath.Base(dir), rest)
	}
}

// resolveLogs makes the log paths absolute and refuses logs a model could
// write through a writable root.
func (c *Config) resolveLogs(errs *errorList) {
	for _, f := range []struct {
		field string
		path  *string
	}{{"audit_log", &c.AuditLog}, {"log", &c.Log}} {
		if *f.path == "" {
			continue
		}
		abs, err := c.abs(*f.path)
		if err != nil {
			errs.add(c.Errorf(f.field, "%s", err))
			continue
		}
		*f.path = abs
		// The file may not exist yet; its directory must.
		dir, err := filepath.EvalSymlinks(filepath.Dir(abs))
		if err != nil {
			errs.add(c.Errorf(f.field, "directory %s does not exist or cannot be resolved", filepath.Dir(abs)))
			continue
		}
		real := filepath.Join(dir, filepath.Base(abs))
		for _, r := range c.Roots {
			if !r.ReadOnly && capability.Within(r.Dir, real) {
				errs.add(c.Errorf(f.field, "%s lies inside writable root %s: a model could rewrite it", abs, r.Dir))
			}
		}
	}
}

func (c *Config) resolveActor(errs *errorList, name string, a Actor) {
	field := "actor." + name
	var scope []int
	if a.Roots == nil {
		for i := range c.Roots {
			scope = append(scope, i)
		}
	}
	for k, p := range a.Roots {
		dir, err := c.resolveDir(p)
		if err != nil {
			errs.add(c.errAt(field+".roots", k, "%s", err))
			continue
		}
		i := slices.IndexFunc(c.Roots, func(r Root) bool { return r.Dir == dir })
		if i < 0 {
			errs.add(c.errAt(field+".roots", k, "%s is not a configured root", dir))
			continue
		}
		if !slices.Contains(scope, i) {
			scope = append(scope, i)
		}
	}
	slices.Sort(scope)
	c.scopes[name] = scope
	writable := slices.ContainsFunc(scope, func(i int) bool { return !c.Roots[i].ReadOnly })
	if writable {
		return
	}
	for i, e := range a.Effects {
		if e == capability.WriteFile || e == capability.EditFile || e == capability.MoveFile {
			if len(scope) == 0 {
				errs.add(c.errAt(field+".effects", i, "%s is granted but the actor has no root", e))
			} else {
				errs.add(c.errAt(field+".effects", i, "%s is granted but every root of the actor is read-only", e))
			}
		}
	}
}

// ActorName chooses the actor sessions run as: named, the only one
// configured, or DefaultActor. An unknown name is not_found.
func (c *Config) ActorName(named string) (string, error) {
	names := c.ActorNames()
	switch {
	case named != "":
		if !slices.Contains(names, named) {
			return "", fault.New(fault.NotFound, "no actor %q is configured (configured: %s)", named, strings.Join(names, ", "))
		}
		return named, nil
	case len(names) == 1:
		return names[0], nil
	case slices.Contains(names, DefaultActor):
		return DefaultActor, nil
	}
	return "", fault.New(fault.InvalidInput, "several actors are configured (%s); choose one with --actor", strings.Join(names, ", "))
}

// ActorNames lists the configured actors in name order; without any, the
// one implicit DefaultActor.
func (c *Config) ActorNames() []string {
	if len(c.Actors) == 0 {
		return []string{DefaultActor}
	}
	return sortedKeys(c.Actors)
}

// Capabilities returns what a session running as actor holds: one
// capability for the reading effects over every root in its scope, and
// one for the other effects over its writable roots, both also over its
// resources. Roots are ordered writable first, then in configuration
// order, so relative paths start at the first writable root.
func (c *Config) Capabilities(actor string) ([]capability.Capability, error) {
	a, ok := c.Actors[actor]
	scope, scoped := c.scopes[actor]
	if !ok && (len(c.Actors) != 0 || actor != DefaultActor) {
		return nil, fault.New(fault.NotFound, "no actor %q is configured (configured: %s)", actor, strings.Join(c.ActorNames(), ", "))
	}
	if !scoped {
		for i := range c.Roots {
			scope = append(scope, i)
		}
	}
	var writable, all []string
	for _, i := range scope {
		if !c.Roots[i].ReadOnly {
			writable = append(writable, c.Roots[i].Dir)
		}
	}
	all = append(all, writable...)
	for _, i := range scope {
		if c.Roots[i].ReadOnly {
			all = append(all, c.Roots[i].Dir)
		}
	}
	effects := a.Effects
	if effects == nil {
		switch {
		case len(writable) > 0:
			effects = slices.Clone(fileEffects)
		case len(all) > 0:
			effects = slices.Clone(readEffects)
		}
		effects = append(effects, capability.ToolSearch)
	}
	var reads, writes []capability.Effect
	for _, e := range effects {
		if e.ReadOnly() {
			reads = append(reads, e)
		} else {
			writes = append(writes, e)
		}
	}
	var caps []capability.Capability
	for _, g := range []struct {
		effects []capability.Effect
		roots   []string
	}{{reads, all}, {writes, writable}} {
		if len(g.effects) == 0 {
			continue
		}
		cp, err := capability.New(actor, g.effects, capability.Scope{Roots: g.roots, Resources: a.Resources})
		if err != nil {
			return nil, fault.Wrap(fault.Internal, err, "building the capabilities of actor %s failed", actor)
		}
		caps = append(caps, cp)
	}
	return caps, nil
}

func effectList() string {
	var names []string
	for _, e := range capability.Effects() {
		names = append(names, string(e))
	}
	return strings.Join(names, ", ") + ", and " + capability.UpstreamPrefix + "NAME for an [upstream.NAME]"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
