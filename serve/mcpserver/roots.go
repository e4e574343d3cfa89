package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// clientRoots narrows one session's roots to its client's roots
// (roots/list), when Options.ClientRoots allows it: the session's file
// tools then reach only where the granted roots and the client's meet
// (capability.Set.Narrow), never further than granted.
//
// The roots are asked for on the session's first tools/call, from within
// that call, so over HTTP the request travels on the call's own response
// stream (a client need not have opened a standalone stream), and again on
// the first call after notifications/roots/list_changed. A client that
// does not declare the roots capability keeps the granted roots, as does a
// session of protocol 2026-07-28 or later (see rootsRetiredVersion). A client
// that declares it but does not answer in time, answers with an error, or
// lists more than limits.MCPClientRootsMax roots leaves the session with
// no root until a later call asks again: failing closed, since the client
// said it wants to narrow.
type clientRoots struct {
	ks  *kernel.Session
	log *slog.Logger

	mu    sync.Mutex // one listing at a time
	stale atomic.Bool
}

func newClientRoots(ks *kernel.Session, log *slog.Logger) *clientRoots {
	r := &clientRoots{ks: ks, log: log}
	r.stale.Store(true)
	return r
}

// pending reports whether the next call must list the client's roots.
func (r *clientRoots) pending() bool { return r != nil && r.stale.Load() }

// changed marks the roots to be listed again (notifications/roots/list_changed).
func (r *clientRoots) changed() {
	if r != nil {
		r.stale.Store(true)
	}
}

// refresh lists the client's roots if they are stale and narrows the
// session to them.
func (r *clientRoots) refresh(ctx context.Context, ss *mcp.ServerSession) {
	if !r.pending() || ss == nil { // r is nil without Options.ClientRoots
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.stale.Load() {
		return
	}
	p := ss.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.RootsV2 == nil || p.ProtocolVersion >= rootsRetiredVersion {
		r.stale.Store(false) // the client has no roots: the granted ones stand
		return
	}
	ctx, cancel := context.WithTimeout(ctx, limits.MCPClientRootsTimeout)
	defer cancel()
	dirs, err := listRoots(ctx, ss)
	if err != nil {
		r.log.Warn("mcp: the client's roots could not be listed; the session has no root until the next call", slog.String("error", err.Error()))
		r.ks.NarrowRoots(nil)
		return
	}
	r.ks.NarrowRoots(dirs)
	r.stale.Store(false)
}

// rootsRetiredVersion is the protocol version that deprecates roots: a
// server may no longer ask for them while serving a request, only through
// a multi-round-trip answer, which capkit does not use. Sessions of that
// version or later keep the granted roots.
const rootsRetiredVersion = "2026-07-28"

var errTooManyRoots = fmt.Errorf("the client lists more than %d roots", limits.MCPClientRootsMax)

// listRoots asks the client for its roots and returns them as host
// directories: file URIs only, symlinks evaluated (a link inside a granted
// root must not lead the narrowed root elsewhere), existing directories
// only. Anything else is left out.
func listRoots(ctx context.Context, ss *mcp.ServerSession) ([]string, error) {
	res, err := ss.ListRoots(ctx, nil)
	if err != nil {
		return nil, err
	}
	if len(res.Roots) > limits.MCPClientRootsMax {
		return nil, errTooManyRoots
	}
	dirs := []string{}
	for _, root := range res.Roots {
		if dir, err := rootDir(root.URI); err == nil {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}

// rootDir is the directory a root's file URI names.
func rootDir(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if u.Scheme != "file" || (u.Host != "" && u.Host != "localhost") || !filepath.IsAbs(u.Path) {
		return "", errors.New("not a local file URI")
	}
	dir, err := filepath.EvalSymlinks(filepath.Clean(u.Path))
	if err != nil {
		return "", err
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return "", errors.New("not a directory")
	}
	return dir, nil
}
