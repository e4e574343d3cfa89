package gateway

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/toolname"
	"github.com/capkit/capkit/limits"
	"github.com/capkit/capkit/net/egress"
	"github.com/capkit/capkit/net/fetch"
	"github.com/capkit/capkit/run/sandbox"
)

// Share says which calls one upstream process (or HTTP session) serves.
type Share string

const (
	// ShareActor starts one per actor: the sessions of an actor share
	// its state (the default).
	ShareActor Share = "actor"
	// ShareSession starts one per session, stopped when the session ends.
	ShareSession Share = "session"
	// ShareServer starts one for every caller of this capkit.
	ShareServer Share = "server"
)

// Upstream is one MCP server whose tools capkit offers behind its kernel:
// a command it starts and speaks to over stdio, or a Streamable HTTP
// endpoint. Its tools are named NAME__TOOL; the effect
// capability.Upstream(Name) grants them.
type Upstream struct {
	// Name is the upstream's name (capability.ValidUpstreamName).
	Name string

	// Command, for a stdio server, is the program and its arguments.
	Command []string
	// Dir is the command's working directory: absolute; "" is its first
	// root (contained), or this process's working directory.
	Dir string
	// Env is added to the command's environment (PATH, LANG, HOME and
	// TMPDIR are set; these override them).
	Env map[string]string
	// SecretEnv names, for each variable, the file whose contents (less
	// one final newline) are its value: read at each start, never
	// logged, shown or audited.
	SecretEnv map[string]string
	// Contain runs the command in capkit's container (run/sandbox):
	// Roots read-write and ReadOnly read-only besides the system
	// directories, Network its only way out. Off, it runs as this
	// process's user with this process's view of the host.
	Contain  bool
	Roots    []string
	ReadOnly []string
	// Network, for a contained command, is the proxy it reaches the
	// network through; nil: no network.
	Network *egress.Proxy

	// URL, for a Streamable HTTP server, is its endpoint (https).
	URL string
	// Policy is the HTTP policy the endpoint is dialled under (net/fetch:
	// the destination guard, its ports, reviewed private destinations,
	// extra trust roots); required with URL.
	Policy *fetch.Policy
	// SecretHeaders names, for each request header, the file whose
	// contents are its value (an Authorization bearer token).
	SecretHeaders map[string]string

	// Tools are the upstream tool names offered (globs, path.Match
	// syntax); nil offers every approved tool.
	Tools []string
	// Share says which calls one process or HTTP session serves; ""
	// means ShareActor.
	Share Share
}

// check refuses an upstream that cannot be started as described.
func (u *Upstream) check() error {
	switch {
	case !capability.ValidUpstreamName(u.Name):
		return fault.New(fault.InvalidInput, "upstream %q: a name is a lower-case letter, then lower-case letters, digits and '-', at most 32 bytes", u.Name)
	case (len(u.Command) > 0) == (u.URL != ""):
		return fault.New(fault.InvalidInput, "upstream %s: give either command (a stdio server) or url (a Streamable HTTP server)", u.Name)
	case u.URL != "" && u.Policy == nil:
		return fault.New(fault.InvalidInput, "upstream %s: a url needs an HTTP policy (policy = \"FILE\")", u.Name)
	case u.Contain && len(u.Roots)+len(u.ReadOnly) == 0:
		return fault.New(fault.InvalidInput, "upstream %s: a contained server needs at least one root or read_only directory to run in", u.Name)
	case u.Network != nil && !u.Contain:
		return fault.New(fault.InvalidInput, "upstream %s: network applies to a contained server; without containment it has the host's network", u.Name)
	}
	switch u.Share {
	case "", ShareActor, ShareSession, ShareServer:
	default:
		return fault.New(fault.InvalidInput, "upstream %s: share %q: want %q, %q or %q", u.Name, u.Share, ShareActor, ShareSession, ShareServer)
	}
	for _, g := range u.Tools {
		if _, err := path.Match(g, ""); err != nil {
			return fault.New(fault.InvalidInput, "upstream %s: tools pattern %q is malformed", u.Name, g)
		}
	}
	return nil
}

// allows reports whether the upstream tool named name is offered at all
// (Tools).
func (u *Upstream) allows(name string) bool {
	if u.Tools == nil {
		return true
	}
	return slices.ContainsFunc(u.Tools, func(g string) bool { ok, _ := path.Match(g, name); return ok })
}

// PublicName is the name an upstream tool reaches a model as:
// UPSTREAM__TOOL. It fails, naming both, when that is not a name every
// client accepts (letters, digits, '_' and '-', at most 64 bytes).
func PublicName(upstream, tool string) (string, error) {
	name := upstream + "__" + tool
	if !toolname.ValidExternal(name) {
		return "", fault.New(fault.InvalidInput, "tool %q of upstream %s would be offered as %q, which is not a name every client accepts (letters, digits, '_' and '-', at most 64 bytes)", tool, upstream, name)
	}
	return name, nil
}

// readSecret reads one secret file: a regular file of at most
// limits.UpstreamMaxSecretBytes, less one final newline. Errors name the
// file, never its contents.
func readSecret(what, file string) (string, error) {
	f, err := os.OpenFile(file, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", fault.Wrap(fault.CodeOf(err), err, "%s: the secret file %s cannot be opened", what, file)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fault.New(fault.InvalidInput, "%s: the secret file %s is not a regular file", what, file)
	}
	b, err := io.ReadAll(io.LimitReader(f, limits.UpstreamMaxSecretBytes+1))
	if err != nil {
		return "", fault.Wrap(fault.IO, err, "%s: the secret file %s cannot be read", what, file)
	}
	if len(b) > limits.UpstreamMaxSecretBytes {
		return "", fault.LimitExceeded(what+": the secret file "+file+" bytes", limits.UpstreamMaxSecretBytes, int64(len(b)))
	}
	b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte("\n")), []byte("\r"))
	if bytes.ContainsAny(b, "\x00\r\n") {
		return "", fault.New(fault.InvalidInput, "%s: the secret file %s holds a line break or NUL byte inside its value", what, file)
	}
	return string(b), nil
}

// secrets are the values of a started upstream's secrets, kept to scrub
// them from what is shown of it (its standard error in a failure).
type secrets []string

// scrub replaces every secret value in s.
func (sc secrets) scrub(s string) string {
	for _, v := range sc {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "[secret]")
		}
	}
	return s
}

// environment is a stdio command's environment: capkit's defaults, the
// upstream's env, then its secrets, each overriding what came before.
func (u *Upstream) environment() ([]string, secrets, error) {
	env := map[string]string{"PATH": defaultPath, "LANG": "C.UTF-8", "HOME": "/tmp", "TMPDIR": "/tmp"}
	if !u.Contain {
		env["HOME"], env["TMPDIR"] = os.Getenv("HOME"), os.TempDir()
	}
	for k, v := range u.Env {
		env[k] = v
	}
	var sc secrets
	for _, k := range sortedKeys(u.SecretEnv) {
		v, err := readSecret("secret_env "+k, u.SecretEnv[k])
		if err != nil {
			return nil, nil, err
		}
		env[k] = v
		sc = append(sc, v)
	}
	out := make([]string, 0, len(env))
	for _, k := range sortedKeys(env) {
		out = append(out, k+"="+env[k])
	}
	return out, sc, nil
}

// defaultPath is a stdio command's PATH unless its env sets one.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// spec is the container of a contained command.
func (u *Upstream) spec(env []string, protected capability.Protected) *sandbox.Spec {
	dir := u.Dir
	if dir == "" {
		dir = slices.Concat(u.Roots, u.ReadOnly)[0]
	}
	return &sandbox.Spec{
		Argv: u.Command, Dir: dir, Env: env,
		Writable: u.Roots, ReadOnly: u.ReadOnly,
		Protected: protected.Paths(u.Roots),
	}
}

var errStopped = errors.New("the upstream was stopped")
