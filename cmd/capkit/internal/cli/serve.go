package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capkit/capkit/audit"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/host"
	"github.com/capkit/capkit/host/config"
	"github.com/capkit/capkit/internal/httpguard"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/serve/dashboard"
	"github.com/capkit/capkit/serve/mcpserver"
)

func newServeCmd(env *Env) *cobra.Command {
	sc := &serveCmd{env: env}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the tools to an MCP client (stdio, or Streamable HTTP)",
		Long: `serve offers the configured actor's tools over the Model Context Protocol:
over stdio by default (standard output carries nothing but the protocol;
diagnostics go to standard error), or over Streamable HTTP at /mcp with
--http. Every MCP session is a new session of the actor: its own call
budgets, its own record of the files it read.

Without --config, --root DIR (repeatable) grants the file tools on DIR and
--read-only DIR only the reading ones (read_file, list_dir, glob, grep,
list_roots). The model is told every root and its mode in the server's
instructions and by list_roots; relative paths start at the first writable
root, and a file in any root is addressed by its absolute path.

HTTP binds loopback addresses only, unless a --token-file (or [http]
tokens) is given (--http 0.0.0.0:8933 serves every address of the
machine); the Host and Origin headers of every request are checked against
loopback names, the IP address the request arrived at and
--allow-host/--allow-origin (DNS rebinding), and with a token every request
must carry "Authorization: Bearer TOKEN". --token-file serves one actor;
[http] tokens in the configuration gives each actor its own token file,
and a session opened with one token refuses requests carrying another.
Token files must be readable by their owner only.

--dashboard HOST:PORT serves the audit page (docs/observability.md) beside
the MCP server: this server's calls as they happen, its budgets, and the
upstream tools awaiting review or withdrawn. It reads the newest events of
this server in memory, whatever audit_log or audit_store is configured
(capkit dashboard reads those). It binds loopback only, unless
--dashboard-token-file gives its token.
The trusted detail log goes to the configured log file, else to standard
error. serve stops on SIGINT or SIGTERM. Over stdio it runs on one
processor (GOMAXPROCS=1) unless the GOMAXPROCS environment variable is set.

Examples:
  capkit serve --root ~/project
  capkit serve --root . --read-only /usr/share/doc
  capkit serve --config capkit.toml --actor assistant --http 127.0.0.1:8931

A Claude Desktop entry (claude_desktop_config.json):
  {"mcpServers": {"capkit": {"command": "capkit", "args": ["serve", "--root", "/home/me/project"]}}}`,
		Args: cobra.NoArgs,
		RunE: sc.run,
	}
	sc.hf.add(cmd)
	f := cmd.Flags()
	f.StringVar(&sc.httpAddr, "http", "", "serve Streamable HTTP on HOST:PORT (endpoint /mcp; port 0 picks a free one) instead of stdio")
	f.StringVar(&sc.clientRoots, "client-roots", "", `"narrow": an MCP client's roots (roots/list) narrow each session's roots to where both meet, never further; "ignore": not asked for (default: the configuration's client_roots, else ignore)`)
	f.StringVar(&sc.tokenFile, "token-file", "", "with --http: a file (mode 600) holding the bearer token every request must carry; its sessions run as --actor")
	f.StringArrayVar(&sc.allowHosts, "allow-host", nil, "with --http: a Host header to accept besides loopback names (NAME or NAME:PORT; repeatable)")
	f.StringArrayVar(&sc.allowOrigins, "allow-origin", nil, "with --http: a browser Origin to accept besides loopback ones (SCHEME://HOST[:PORT]; repeatable)")
	f.StringVar(&sc.dash.addr, "dashboard", "", "also serve the audit page on HOST:PORT (port 0 picks a free one)")
	f.StringVar(&sc.dash.tokenFile, "dashboard-token-file", "", "with --dashboard: a file (mode 600) holding the token every page request must carry; required beyond loopback")
	sc.hb.add(cmd)
	return cmd
}

// serveCmd is serve's flags and its steps.
type serveCmd struct {
	env                              *Env
	hf                               hostFlags
	hb                               httpBounds
	httpAddr, tokenFile, clientRoots string
	allowHosts, allowOrigins         []string
	dash                             dashFlags
}

func (sc *serveCmd) run(cmd *cobra.Command, _ []string) error {
	if sc.httpAddr == "" && sc.tokenFile != "" {
		return fault.New(fault.InvalidInput, "--token-file applies to --http only")
	}
	if sc.httpAddr == "" && len(sc.allowHosts)+len(sc.allowOrigins) > 0 {
		return fault.New(fault.InvalidInput, "--allow-host and --allow-origin apply to --http only")
	}
	var token string
	if sc.tokenFile != "" {
		var err error
		if token, err = readToken(sc.tokenFile); err != nil {
			return err
		}
	}
	if sc.dash.addr == "" && sc.dash.tokenFile != "" {
		return fault.New(fault.InvalidInput, "--dashboard-token-file applies to --dashboard only")
	}
	var recent *audit.Recent
	var sinks []audit.Sink
	var dashToken string
	if sc.dash.addr != "" {
		var err error
		if dashToken, err = sc.dash.check("--dashboard"); err != nil {
			return err
		}
		recent = audit.NewRecent(limits.DashboardRingEvents)
		sinks = append(sinks, recent.Sink())
	}
	h, err := sc.hf.openHost(sc.env, sc.env.Stderr, sinks...)
	if err != nil {
		return err
	}
	defer h.Close()
	opts, err := sc.options(h)
	if err != nil {
		return err
	}
	// The MCP server is made ready first, so a refusal (an address, a
	// token, an actor) is reported before the page says it is serving.
	serve, abandon, err := sc.prepareStdio(h, opts)
	if sc.httpAddr != "" {
		serve, abandon, err = sc.prepareHTTP(cmd, h, opts, token)
	}
	if err != nil {
		return err
	}
	if recent != nil {
		stop, err := sc.startDashboard(cmd.Context(), h, recent, dashToken)
		if err != nil {
			abandon()
			return err
		}
		defer stop()
	}
	return serve(cmd.Context())
}

// startDashboard serves the audit page over recent until the returned
// stop is called.
func (sc *serveCmd) startDashboard(ctx context.Context, h *host.Host, recent *audit.Recent, token string) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	errc := make(chan error, 1)
	serving := make(chan struct{})
	go func() {
		errc <- sc.dash.serve(ctx, sc.env, recent, token, &dashboard.Options{Host: h, Describe: recentDescribe(),
			ChainHint: recentHint(h.Config.AuditLog), Log: h.Log}, func() { close(serving) })
	}()
	select {
	case err := <-errc:
		cancel()
		return nil, err
	case <-serving:
	}
	return func() {
		cancel()
		if err := <-errc; err != nil {
			fmt.Fprintf(sc.env.Stderr, "capkit: dashboard: %v\n", err)
		}
	}, nil
}

// prepareStdio readies one session of the chosen actor on standard input
// and output; serve serves it, abandon gives it up unserved.
func (sc *serveCmd) prepareStdio(h *host.Host, opts *mcpserver.Options) (serve func(context.Context) error, abandon func(), err error) {
	if sc.httpAddr != "" {
		return nil, nil, nil
	}
	actor, err := sc.hf.chooseActor(h)
	if err != nil {
		return nil, nil, err
	}
	sessions, err := h.Sessions(actor)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) error {
		srv := mcpserver.New(h.Runtime, sessions, opts)
		fmt.Fprintf(sc.env.Stderr, "capkit: serving MCP on stdio as actor %s\n", actor)
		stdioProcs()
		return stopped(ctx, srv.ServeStdio(ctx, sc.env.Stdin, sc.env.Stdout))
	}, func() {}, nil
}

// prepareHTTP readies --http, listening: the tenants of the tokens given
// (--token-file for the chosen actor, or [http] tokens, one actor each),
// or without a token the chosen actor on loopback; serve serves them,
// abandon closes the listener unserved.
func (sc *serveCmd) prepareHTTP(cmd *cobra.Command, h *host.Host, opts *mcpserver.Options, token string) (serve func(context.Context) error, abandon func(), err error) {
	var sessions func(context.Context) (*kernel.Session, error)
	who := ""
	if opts.Tenants, err = sc.tenants(h, token); err != nil {
		return nil, nil, err
	}
	switch len(opts.Tenants) {
	case 0:
		actor, err := sc.hf.chooseActor(h)
		if err != nil {
			return nil, nil, err
		}
		if sessions, err = h.Sessions(actor); err != nil {
			return nil, nil, err
		}
		who = "as actor " + actor
	case 1:
		who = "as actor " + opts.Tenants[0].Name
	default:
		var names []string
		for _, t := range opts.Tenants {
			names = append(names, t.Name)
		}
		who = "for actors " + strings.Join(names, ", ") + " (one token each)"
	}
	if err := sc.hb.apply(cmd, h.Config.HTTP, opts); err != nil {
		return nil, nil, err
	}
	// Every option is set before New, which copies them.
	ln, err := sc.listen(opts)
	if err != nil {
		return nil, nil, err
	}
	opts.OnServing = func(addr net.Addr) {
		fmt.Fprintf(sc.env.Stderr, "capkit: serving MCP on %s %s\n", sc.endpoint(addr), who)
	}
	return func(ctx context.Context) error {
		return stopped(ctx, mcpserver.New(h.Runtime, sessions, opts).Serve(ctx, ln))
	}, func() { ln.Close() }, nil
}

// tenants are the HTTP server's tokens and the actors they serve: token
// (from --token-file) for the chosen actor, or each actor's of [http]
// tokens, or none.
func (sc *serveCmd) tenants(h *host.Host, token string) ([]mcpserver.Tenant, error) {
	files := h.Config.HTTP.Tokens
	switch {
	case len(files) > 0 && token != "":
		return nil, fault.New(fault.InvalidInput, "--token-file and [http] tokens both give tokens: use --token-file for one actor, or [http] tokens for one token per actor")
	case len(files) > 0 && sc.hf.actor != "":
		return nil, fault.New(fault.InvalidInput, "--actor does not apply to --http when [http] tokens is configured: each token names its actor")
	case token != "":
		actor, err := sc.hf.chooseActor(h)
		if err != nil {
			return nil, err
		}
		sessions, err := h.Sessions(actor)
		if err != nil {
			return nil, err
		}
		return []mcpserver.Tenant{{Name: actor, Token: token, NewSession: sessions}}, nil
	}
	var out []mcpserver.Tenant
	byToken := map[string]string{}
	for _, actor := range h.Config.HTTP.TokenActors() {
		tok, err := readToken(files[actor])
		if err != nil {
			return nil, err
		}
		if other, dup := byToken[tok]; dup {
			return nil, fault.New(fault.InvalidInput, "token files %s and %s hold the same token: each actor needs a token of its own", files[other], files[actor])
		}
		byToken[tok] = actor
		sessions, err := h.Sessions(actor)
		if err != nil {
			return nil, err
		}
		out = append(out, mcpserver.Tenant{Name: actor, Token: tok, NewSession: sessions})
	}
	return out, nil
}

// endpoint is the URL of the endpoint served at addr, named by the host
// --http gave (0.0.0.0 stays 0.0.0.0, localhost stays localhost) with the
// port the listener got.
func (sc *serveCmd) endpoint(addr net.Addr) string {
	host, _, _ := net.SplitHostPort(sc.httpAddr)
	if tcp, ok := addr.(*net.TCPAddr); ok {
		if host == "" {
			host = tcp.IP.String()
		}
		return "http://" + net.JoinHostPort(host, strconv.Itoa(tcp.Port)) + mcpserver.Path
	}
	return "http://" + addr.String() + mcpserver.Path
}

// options are the MCP server's options for host h.
func (sc *serveCmd) options(h *host.Host) (*mcpserver.Options, error) {
	opts := &mcpserver.Options{Version: Version, Log: h.Log, SessionInstructions: h.Instructions,
		AllowedHosts: sc.allowHosts, AllowedOrigins: sc.allowOrigins}
	var err error
	if opts.ClientRoots, err = clientRootsMode(sc.clientRoots, h.Config.ClientRoots); err != nil {
		return nil, err
	}
	if opts.ClientRoots {
		opts.SessionInstructions = func(ks *kernel.Session) string {
			return h.Instructions(ks) + "Your client's own roots may narrow these; list_roots lists the roots in effect.\n"
		}
	}
	return opts, nil
}

// listen opens the --http address: loopback, or beyond it with tokens
// (then a name it gives is an allowed Host too).
func (sc *serveCmd) listen(opts *mcpserver.Options) (net.Listener, error) {
	host, _, err := net.SplitHostPort(sc.httpAddr)
	if err != nil {
		return nil, fault.New(fault.InvalidInput, "--http %s: want HOST:PORT, e.g. 127.0.0.1:8931", sc.httpAddr)
	}
	if !httpguard.IsLoopbackHost(host) {
		if len(opts.Tenants) == 0 {
			return nil, fault.New(fault.Denied, "--http %s is not a loopback address: serving beyond this machine requires --token-file or [http] tokens (and TLS in front)", sc.httpAddr)
		}
		opts.AllowNonLoopback = true
		// An IP address is accepted as Host when it is the one a request
		// arrived at; a name must be allowed.
		if host != "" && net.ParseIP(host) == nil {
			opts.AllowedHosts = append(opts.AllowedHosts, host)
		}
	}
	ln, err := net.Listen("tcp", sc.httpAddr)
	if err != nil {
		return nil, fault.Wrap(fault.Unavailable, err, "cannot listen on %s", sc.httpAddr)
	}
	return ln, nil
}

// httpBounds are serve's flags for the HTTP bounds; each overrides the
// configuration's [http] key of the same meaning.
type httpBounds struct {
	maxSessions      int
	sessionIdle      time.Duration
	maxInFlightBytes int64
	bodyTimeout      time.Duration
	stateless        bool
}

func (b *httpBounds) add(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&b.maxSessions, "max-sessions", 0, fmt.Sprintf("with --http: live MCP sessions (default %d, at most %d); a new one evicts the least recently used idle one", limits.MCPDefaultMaxSessions, limits.MCPHardMaxSessions))
	f.DurationVar(&b.sessionIdle, "session-idle", 0, fmt.Sprintf("with --http: close a session after this long without requests (default %v)", limits.MCPDefaultSessionIdle))
	f.Int64Var(&b.maxInFlightBytes, "max-in-flight-bytes", 0, fmt.Sprintf("with --http: request body bytes held at once across connections (default %d)", int64(limits.MCPDefaultInFlightBytes)))
	f.DurationVar(&b.bodyTimeout, "body-timeout", 0, fmt.Sprintf("with --http: time a client has to send one request body (default %v)", limits.MCPDefaultBodyTimeout))
	f.BoolVar(&b.stateless, "stateless", false, "with --http: also serve the "+mcpserver.StatelessVersion+" stateless protocol (its callers share one session)")
}

// apply sets opts from the configuration, then from the flags given, and
// checks the flags against the same ranges as the configuration.
func (b *httpBounds) apply(cmd *cobra.Command, c config.HTTPConfig, opts *mcpserver.Options) error {
	opts.MaxSessions, opts.SessionIdleTimeout = c.MaxSessions, time.Duration(c.SessionIdle)
	opts.MaxInFlightBytes, opts.BodyTimeout, opts.Stateless = c.MaxInFlightBytes, time.Duration(c.BodyTimeout), c.Stateless
	f := cmd.Flags()
	if f.Changed("max-sessions") {
		opts.MaxSessions = b.maxSessions
	}
	if f.Changed("session-idle") {
		opts.SessionIdleTimeout = b.sessionIdle
	}
	if f.Changed("max-in-flight-bytes") {
		opts.MaxInFlightBytes = b.maxInFlightBytes
	}
	if f.Changed("body-timeout") {
		opts.BodyTimeout = b.bodyTimeout
	}
	if f.Changed("stateless") {
		opts.Stateless = b.stateless
	}
	switch {
	case opts.MaxSessions < 0 || opts.MaxSessions > limits.MCPHardMaxSessions || f.Changed("max-sessions") && opts.MaxSessions == 0:
		return fault.New(fault.InvalidInput, "--max-sessions %d is outside 1..%d", opts.MaxSessions, limits.MCPHardMaxSessions)
	case opts.MaxInFlightBytes < 0 || opts.MaxInFlightBytes > 0 && opts.MaxInFlightBytes < limits.MCPMaxMessageBytes || opts.MaxInFlightBytes > limits.MCPHardMaxInFlightBytes:
		return fault.New(fault.InvalidInput, "--max-in-flight-bytes %d is outside %d..%d", opts.MaxInFlightBytes, limits.MCPMaxMessageBytes, int64(limits.MCPHardMaxInFlightBytes))
	case opts.SessionIdleTimeout < 0 || opts.SessionIdleTimeout > limits.MCPHardMaxSessionIdle:
		return fault.New(fault.InvalidInput, "--session-idle %v is outside (0, %v]", opts.SessionIdleTimeout, limits.MCPHardMaxSessionIdle)
	case opts.BodyTimeout < 0 || opts.BodyTimeout > limits.MCPHardMaxBodyTimeout:
		return fault.New(fault.InvalidInput, "--body-timeout %v is outside (0, %v]", opts.BodyTimeout, limits.MCPHardMaxBodyTimeout)
	}
	return nil
}

// clientRootsMode is whether client roots narrow sessions: the flag's
// value if given, else the configuration's.
func clientRootsMode(flag, configured string) (bool, error) {
	mode := configured
	if flag != "" {
		mode = flag
	}
	switch mode {
	case "", config.ClientRootsIgnore:
		return false, nil
	case config.ClientRootsNarrow:
		return true, nil
	}
	return false, fault.New(fault.InvalidInput, "--client-roots %q: want %q or %q", flag, config.ClientRootsNarrow, config.ClientRootsIgnore)
}

// stdioProcs runs the stdio server on one processor (GOMAXPROCS=1) unless
// the GOMAXPROCS environment variable says otherwise. One client sends one
// call at a time and no tool works in parallel, so a second processor
// only added cost: every hand-off between goroutines woke a second thread,
// which was about a fifth of a small call's CPU (bench/RESULTS.md). The
// cost of one processor: a handler abandoned at its deadline that keeps
// computing shares it with the calls that follow, until it returns.
func stdioProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// stopped makes a stop asked for by a signal (ctx ended) a success.
func stopped(ctx context.Context, err error) error {
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// readToken reads a bearer token: the file's content without surrounding
// whitespace, limits.TokenMinBytes to limits.TokenMaxBytes of visible
// ASCII. A token file its group or others may read is refused: whoever
// reads it can act as its actor.
func readToken(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fault.Wrap(fault.CodeOf(err), err, "token file %s cannot be opened", path)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return "", fault.New(fault.InvalidInput, "token file %s is not a regular file", path)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return "", fault.New(fault.Denied, "token file %s may be read by its group or others (mode %v): chmod 600 it", path, st.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, limits.TokenMaxBytes+1))
	if err != nil {
		return "", fault.Wrap(fault.IO, err, "token file %s cannot be read", path)
	}
	if len(data) > limits.TokenMaxBytes {
		return "", fault.LimitExceeded("token file "+path+" bytes", limits.TokenMaxBytes, 0)
	}
	token := string(bytes.TrimSpace(data))
	if len(token) < limits.TokenMinBytes {
		return "", fault.New(fault.InvalidInput, "token file %s holds %d bytes; a token needs at least %d (e.g. openssl rand -hex 32)", path, len(token), limits.TokenMinBytes)
	}
	for i := 0; i < len(token); i++ {
		if token[i] <= ' ' || token[i] > '~' {
			return "", fault.New(fault.InvalidInput, "token file %s: the token must be visible ASCII without spaces (byte %d is not)", path, i)
		}
	}
	return token, nil
}
