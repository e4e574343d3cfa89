package mcpserver

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// Tenant is one bearer token of an HTTP server and the sessions it opens:
// one server serves several actors, each with its own token, capabilities,
// budgets and audit identity (what NewSession gives its sessions).
type Tenant struct {
	// Name identifies the tenant in the log (the actor's name); never the
	// token.
	Name string
	// Token is what the tenant's requests carry, as
	// "Authorization: Bearer <token>": visible ASCII without spaces,
	// different from every other tenant's.
	Token string
	// NewSession creates the kernel session of each MCP session opened
	// with Token; nil means the newSession given to New.
	NewSession func(ctx context.Context) (*kernel.Session, error)
}

// tenant is a Tenant as the handler holds it: the token's digest only.
type tenant struct {
	name       string
	digest     [sha256.Size]byte
	newSession func(ctx context.Context) (*kernel.Session, error)
	// user is the SDK's TokenInfo.UserID for the tenant's requests: a
	// session records the user of the request that created it and
	// refuses requests of any other (403).
	user string

	// The stateless protocol's session, shared by the tenant's stateless
	// requests (Options.Stateless), made on first use.
	statelessMu sync.Mutex
	statelessMS *mcp.Server
}

// tenants are the handler's tenants from the options: Tenants, or
// BearerToken as one tenant of newSession, or none (no token required).
// Tokens must be visible ASCII without spaces and distinct.
func tenants(o *Options, newSession func(context.Context) (*kernel.Session, error)) ([]*tenant, error) {
	list := o.Tenants
	switch {
	case o.BearerToken != "" && len(list) > 0:
		return nil, fault.New(fault.InvalidInput, "mcpserver: give BearerToken or Tenants, not both")
	case o.BearerToken != "":
		list = []Tenant{{Token: o.BearerToken}}
	}
	var out []*tenant
	seen := map[[sha256.Size]byte]bool{}
	for i, tn := range list {
		if !visibleToken(tn.Token) {
			return nil, fault.New(fault.InvalidInput, "mcpserver: the token of tenant %q is empty or not visible ASCII without spaces", tn.Name)
		}
		t := &tenant{name: tn.Name, digest: sha256.Sum256([]byte(tn.Token)), newSession: tn.NewSession, user: "tenant-" + strconv.Itoa(i)}
		if seen[t.digest] {
			return nil, fault.New(fault.InvalidInput, "mcpserver: tenant %q has the token of another tenant: each token must name one tenant", tn.Name)
		}
		seen[t.digest] = true
		if t.newSession == nil {
			t.newSession = newSession
		}
		out = append(out, t)
	}
	return out, nil
}

func visibleToken(tok string) bool {
	for i := 0; i < len(tok); i++ {
		if tok[i] <= ' ' || tok[i] > '~' {
			return false
		}
	}
	return tok != ""
}

// authenticate is the tenant whose token the request carries, or nil.
// Digests are compared, in constant time whatever the lengths, with every
// tenant's: how long it takes does not depend on which token, if any,
// matched.
func (h *httpHandler) authenticate(r *http.Request) *tenant {
	const prefix = "Bearer "
	a := r.Header.Get("Authorization")
	if len(a) <= len(prefix) || !strings.EqualFold(a[:len(prefix)], prefix) {
		return nil
	}
	sum := sha256.Sum256([]byte(a[len(prefix):]))
	found := -1
	for i, t := range h.tenants {
		eq := subtle.ConstantTimeCompare(sum[:], t.digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	if found < 0 {
		return nil
	}
	return h.tenants[found]
}

// tenantKey carries the request's tenant from ServeHTTP to the session
// hooks.
type tenantKey struct{}

func tenantOf(ctx context.Context) *tenant {
	t, _ := ctx.Value(tenantKey{}).(*tenant)
	return t
}

// withUser hands the request's tenant to the SDK as its TokenInfo: the
// SDK's own check that a session's requests all come from the user that
// created it (auth.TokenInfo.UserID) then keeps each tenant to its own
// sessions. The token was checked already; this puts no second check in
// the way.
func withUser(next http.Handler) http.Handler {
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		t := tenantOf(ctx)
		if t == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: t.user}, nil
	}
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(next)
}
