package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/capkit/capkit/archive/zipfile"
	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files"
	"github.com/capkit/capkit/files/fileio"
	"github.com/capkit/capkit/files/local"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/files/tree"
	"github.com/capkit/capkit/gateway"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/net/budget"
	"github.com/capkit/capkit/parse/feed"
	"github.com/capkit/capkit/parse/htmldoc"
	"github.com/capkit/capkit/parse/sniff"
	"github.com/capkit/capkit/parse/tabular"
	"github.com/capkit/capkit/parse/textjson"
	"github.com/capkit/capkit/search/lexindex"
	"github.com/capkit/capkit/search/passages"
	"github.com/capkit/capkit/search/semindex"
	"github.com/capkit/capkit/store/journal"
	"github.com/capkit/capkit/store/state"
)

// registrars register the capability packages' tools, in this order (the
// order tools are listed in). Each reads its own section of h.Config and
// may leave cleanup to h.Close with h.OnClose. The file tools and the
// readers that take a path share one local provider, h.files; every tool
// that replaces a file the file tools can see dispatches on h.events, the
// seam the file policy (read before edit) is attached to. Every group that
// changes files in roots is given h.protected, what none may change.
var registrars = []func(b *kernel.Builder, h *Host) error{
	func(b *kernel.Builder, h *Host) error {
		return tools.RegisterTools(b, &tools.ToolOptions{Provider: h.files, Events: h.events, Protected: h.protected})
	},
	func(b *kernel.Builder, h *Host) error {
		return textjson.RegisterTools(b, &textjson.ToolOptions{Files: h.files})
	},
	func(b *kernel.Builder, h *Host) error {
		return tabular.RegisterTools(b, &tabular.ToolOptions{Files: h.files})
	},
	func(b *kernel.Builder, h *Host) error {
		return htmldoc.RegisterTools(b, &htmldoc.ToolOptions{Files: h.files})
	},
	func(b *kernel.Builder, h *Host) error {
		return feed.RegisterTools(b, &feed.ToolOptions{Files: h.files})
	},
	func(b *kernel.Builder, h *Host) error {
		return sniff.RegisterTools(b, &sniff.ToolOptions{Files: h.files})
	},
	func(b *kernel.Builder, h *Host) error {
		return fileio.RegisterTools(b, &fileio.ToolOptions{Events: h.events, Protected: h.protected})
	},
	func(b *kernel.Builder, _ *Host) error { return tree.RegisterTools(b, nil) },
	func(b *kernel.Builder, h *Host) error {
		return state.RegisterTools(b, &state.ToolOptions{Events: h.events, Protected: h.protected})
	},
	func(b *kernel.Builder, h *Host) error {
		return zipfile.RegisterTools(b, &zipfile.ToolOptions{Protected: h.protected})
	},
	func(b *kernel.Builder, h *Host) error {
		return journal.RegisterTools(b, &journal.ToolOptions{Protected: h.protected})
	},
	// The text archive's tools ([archive]): archive.go.
	registerArchive,
	func(b *kernel.Builder, h *Host) error {
		if h.Config.Semindex.Model == "" {
			h.notOffer("semindex_", "[semindex] model is not set: the semantic index tools need the model's directory (docs/search.md: Semantic index)")
			return nil
		}
		return semindex.RegisterTools(b, &semindex.ToolOptions{ModelDir: h.Config.Semindex.Model, Pin: h.Config.Semindex.Pin, Protected: h.protected, Files: h.files})
	},
	func(b *kernel.Builder, _ *Host) error { return passages.RegisterTools(b, nil) },
	func(b *kernel.Builder, h *Host) error {
		return lexindex.RegisterTools(b, &lexindex.ToolOptions{Protected: h.protected, Files: h.files})
	},
	// Fixed-file catalogs ([catalog.NAME]) and run_script ([script]): catalog_script.go.
	registerCatalogs,
	registerScript,
	// net_fetch and budget_status ([net]): net.go.
	registerNet,
	// Contained commands ([run], [test], [build]): run.go.
	registerRun,
	// Other MCP servers' tools ([upstream.NAME]): gateway.go.
	registerGateway,
}

// Options configure New. The zero value is usable.
type Options struct {
	// Log receives the trusted detail log when the configuration names no
	// log file; nil discards it. It is written as text for a person.
	Log io.Writer
	// Version is capkit's, for what the host exports (telemetry's
	// service.version).
	Version string
	// Sinks are audit sinks besides the configured ones (the dashboard's
	// recent events: audit.Recent): every event goes to them too.
	Sinks []audit.Sink
}

// Host is a runtime built from a configuration, with the log files it
// opened. Close it when done.
type Host struct {
	// Config is the configuration the runtime was built from.
	Config *config.Config
	// Runtime holds every registered tool, with the configured policies.
	Runtime *kernel.Runtime
	// Log is the trusted detail log (never shown to a model).
	Log *slog.Logger
	// Warnings are what the person starting the runtime should know about
	// its roots (a pseudo-filesystem mounted inside one); they are logged
	// too.
	Warnings []string

	// files is the local provider the file tools and path-reading tools
	// share.
	files *local.Provider
	// events is the file policy seam shared by every tool that replaces
	// or creates a file the file tools can see: the file tools,
	// state_replace, file_copy.
	events *files.Events
	// protected are the paths no tool may change (config.Protected),
	// given to every group that changes files in roots; the contained
	// commands get the same set through config.RunOptions.
	protected capability.Protected
	audit     *slog.Logger // nil without an audit trail
	// trail is the audit trail's sinks (audit.go).
	trail *auditSinks
	// netBudget is [net]'s budget, once registerNet opened it (read by
	// the telemetry exporter's goroutine and the dashboard).
	netBudget atomic.Pointer[budget.Budget]
	// gateway serves the [upstream.NAME] tools, once registerGateway made
	// it (read by the dashboard).
	gateway atomic.Pointer[gateway.Gateway]
	opts    Options
	closers []func() error
	// unoffered says, by tool name prefix, why tools whose backing is not
	// configured were not registered.
	unoffered map[string]string
}

// notOffer records that the tools named prefix… are not registered, and
// why, in the log and for the [tool.NAME] check.
func (h *Host) notOffer(prefix, why string) {
	h.Log.Info("tools not offered", "tools", prefix+"*", "why", why)
	if h.unoffered == nil {
		h.unoffered = map[string]string{}
	}
	h.unoffered[prefix] = why
}

// New builds the runtime cfg describes. A [tool.NAME] table naming no
// registered tool is a *config.Error; log files that cannot be opened are
// *fault.Error values.
func New(cfg *config.Config, opts *Options) (_ *Host, err error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	protected := cfg.Protected()
	h := &Host{Config: cfg, files: local.New(), events: policy.NewEvents(), protected: protected, opts: o}
	defer func() {
		if err != nil {
			h.Close()
		}
	}()
	switch {
	case cfg.Log != "":
		f, err := h.openLog(cfg.Log)
		if err != nil {
			return nil, err
		}
		h.Log = slog.New(slog.NewJSONHandler(f, nil))
	case o.Log != nil:
		h.Log = slog.New(slog.NewTextHandler(o.Log, nil))
	default:
		h.Log = slog.New(slog.DiscardHandler)
	}
	audit, err := h.openAudit()
	if err != nil {
		return nil, err
	}
	if h.Warnings, err = checkRoots(cfg.Roots); err != nil {
		return nil, err
	}
	for _, w := range h.Warnings {
		h.Log.Warn(w)
	}
	b := kernel.NewBuilder(&kernel.Options{Audit: audit, Log: h.Log, PolicyOverride: policyOverride(cfg), ToolIndex: newToolIndex})
	for _, register := range registrars {
		if err := register(b, h); err != nil {
			return nil, err
		}
	}
	if h.Runtime, err = b.Build(); err != nil {
		return nil, err
	}
	var unknown []error
	for _, name := range sortedTools(cfg) {
		if _, ok := h.Runtime.Policy(name); ok {
			continue
		}
		if up, ok := cfg.UpstreamTool(name); ok {
			// Not approved yet, or left out by its tools = [...]: its
			// policy applies once it is.
			h.Log.Warn("a [tool] table names an upstream tool that is not offered", slog.String("tool", name), slog.String("upstream", up))
			continue
		}
		unknown = append(unknown, cfg.Errorf("tool."+name, "%s", h.whyNotRegistered(name)))
	}
	unknown = append(unknown, unusedEffects(cfg, h.Runtime)...)
	if len(unknown) > 0 {
		return nil, errors.Join(unknown...)
	}
	return h, nil
}

// whyNotRegistered says why no tool name is registered.
func (h *Host) whyNotRegistered(name string) string {
	for prefix, why := range h.unoffered {
		if strings.HasPrefix(name, prefix) {
			return fmt.Sprintf("tool %q is not offered: %s", name, why)
		}
	}
	return fmt.Sprintf("no tool %q is registered (capkit tools --all lists them)", name)
}

// unusedEffects are the actors' effects that grant no registered tool: a
// configuration that names one promises something this build cannot do.
func unusedEffects(cfg *config.Config, rt *kernel.Runtime) []error {
	used := map[capability.Effect]bool{}
	for _, e := range rt.Catalog().Entries() {
		used[e.Effect] = true
	}
	var errs []error
	for _, actor := range cfg.ActorNames() {
		for _, eff := range cfg.Actors[actor].Effects {
			if _, upstream := eff.Upstream(); upstream {
				continue // configured (config checks it); its tools may await approval
			}
			if !used[eff] {
				errs = append(errs, cfg.Errorf("actor."+actor+".effects", "effect %q grants no tool in this build or configuration (capkit tools --all lists the tools and their effects)", eff))
			}
		}
	}
	return errs
}

// policyOverride applies the [tool.NAME] tables: each field that is set
// replaces the tool's own.
func policyOverride(cfg *config.Config) func(kernel.Policy) kernel.Policy {
	return func(p kernel.Policy) kernel.Policy {
		t, ok := cfg.Tools[p.Name]
		if !ok {
			return p
		}
		if t.MaxCalls != 0 {
			p.MaxCalls = t.MaxCalls
		}
		if t.MaxInputBytes != 0 {
			p.MaxInputBytes = t.MaxInputBytes
		}
		if t.MaxOutputBytes != 0 {
			p.MaxOutputBytes = t.MaxOutputBytes
		}
		if t.Timeout != 0 {
			p.Timeout = time.Duration(t.Timeout)
		}
		if t.MaxConcurrent != 0 {
			p.MaxConcurrent = t.MaxConcurrent
		}
		return p
	}
}

// openLog opens a log file for appending, creating it readable by its
// owner only. It must be a regular file; the open does not block on a
// FIFO.
func (h *Host) openLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, fault.Wrap(fault.CodeOf(err), err, "log file %s cannot be opened", path)
	}
	h.OnClose(func() error {
		if err := f.Close(); err != nil {
			return fmt.Errorf("closing %s: %w", path, err)
		}
		return nil
	})
	st, err := f.Stat()
	if err != nil {
		return nil, fault.Wrap(fault.IO, err, "log file %s cannot be read", path)
	}
	if !st.Mode().IsRegular() {
		return nil, fault.New(fault.InvalidInput, "log file %s is not a regular file", path)
	}
	return f, nil
}

// Capabilities returns what sessions of actor hold (see
// config.Config.Capabilities).
func (h *Host) Capabilities(actor string) ([]capability.Capability, error) {
	return h.Config.Capabilities(actor)
}

// NewSession starts a session for actor. Trusted sessions (the CLI run by
// its user) see failure detail; sessions that serve a model must not be
// trusted.
func (h *Host) NewSession(actor string, trusted bool) (*kernel.Session, error) {
	caps, err := h.Capabilities(actor)
	if err != nil {
		return nil, err
	}
	return h.Runtime.NewSession(actor, caps, &kernel.SessionOptions{Trusted: trusted})
}

// Sessions returns the function an MCP server calls to start each
// session: an untrusted session of actor. The actor is checked now.
func (h *Host) Sessions(actor string) (func(context.Context) (*kernel.Session, error), error) {
	caps, err := h.Capabilities(actor)
	if err != nil {
		return nil, err
	}
	return func(context.Context) (*kernel.Session, error) {
		return h.Runtime.NewSession(actor, caps, nil)
	}, nil
}

// Instructions are what a model serving session ks is told when it starts:
// its file roots, their modes, how paths address them, and the protected
// paths in the writable ones.
func (h *Host) Instructions(ks *kernel.Session) string {
	roots := tools.Roots(ks.Capabilities())
	text := tools.RootsText(roots) + upstreamText(ks.Capabilities())
	var writable []string
	for _, r := range roots {
		if r.Mode == tools.ModeReadWrite {
			writable = append(writable, r.Path)
		}
	}
	if len(writable) == 0 {
		return text
	}
	var shown []string
	for _, r := range writable {
		if h.protected.Covers(r) { // a client root inside .git, say
			shown = append(shown, r)
		}
	}
	for _, p := range h.protected.Paths(writable) {
		if rel, err := filepath.Rel(roots[0].Path, p); err == nil && capability.Within(roots[0].Path, p) {
			p = rel
		}
		shown = append(shown, p)
	}
	return text + "Read-only for every tool, whatever the root's mode (the host reads or runs them later): " + strings.Join(shown, ", ") + "\n"
}

// OnClose adds f to what Close runs (log files, catalogs' descriptors).
func (h *Host) OnClose(f func() error) { h.closers = append(h.closers, f) }

// Close releases what the host opened, last opened first.
func (h *Host) Close() error {
	var errs []error
	for i := len(h.closers) - 1; i >= 0; i-- {
		errs = append(errs, h.closers[i]())
	}
	h.closers = nil
	return errors.Join(errs...)
}

func sortedTools(cfg *config.Config) []string {
	names := make([]string, 0, len(cfg.Tools))
	for n := range cfg.Tools {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
