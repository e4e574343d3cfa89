package mcpserver

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

const (
	aliceToken = "alice-token-0123456789"
	bobToken   = "bob-token-0123456789ab"
)

// actorSessions makes the sessions of actor, holding effects.
func actorSessions(rt *kernel.Runtime, actor string, effects ...capability.Effect) func(context.Context) (*kernel.Session, error) {
	return func(context.Context) (*kernel.Session, error) {
		c, err := capability.New(actor, effects, capability.Scope{})
		if err != nil {
			return nil, err
		}
		return rt.NewSession(actor, []capability.Capability{c}, nil)
	}
}

// tenantServer serves alice (reading) and bob (searching only) over HTTP.
func tenantServer(t *testing.T, opts *Options) (*Server, string) {
	t.Helper()
	rt := testRuntime(t)
	if opts == nil {
		opts = &Options{}
	}
	opts.Tenants = []Tenant{
		{Name: "alice", Token: aliceToken, NewSession: actorSessions(rt, "alice", capability.ReadFile)},
		{Name: "bob", Token: bobToken, NewSession: actorSessions(rt, "bob", capability.Search)},
	}
	s := New(rt, nil, opts)
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// rawPost posts body with token and session id (each may be empty) and
// returns the status, the session id answered and the body.
func rawPost(t *testing.T, url, token, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(data)
}

func bearerHeader(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// TestHTTPTenants: each token opens sessions of its own actor, with that
// actor's capabilities; a request needs one of the tokens.
func TestHTTPTenants(t *testing.T) {
	_, url := tenantServer(t, nil)
	alice, err := connectHTTPURL(url, bearerHeader(aliceToken), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := connectHTTPURL(url, bearerHeader(bobToken), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	if r := call(t, alice, "echo", map[string]any{"text": "hi"}); r.IsError || text(t, r) != "hi" {
		t.Errorf("alice's echo: %q", text(t, r))
	}
	if r := call(t, bob, "echo", map[string]any{"text": "hi"}); !r.IsError || !strings.HasPrefix(text(t, r), "denied") {
		t.Errorf("bob's echo (bob may only search): %q", text(t, r))
	}
	for _, tok := range []string{"", "alice-token", aliceToken + "x", aliceToken[:len(aliceToken)-1] + "Y"} {
		if code, _, _ := rawPost(t, url, tok, "", initBody); code != http.StatusUnauthorized {
			t.Errorf("token %q: status %d, want 401", tok, code)
		}
	}
}

// TestHTTPTenantSessionsAreTheirs: a session opened with alice's token
// refuses every request carrying bob's (or none), and keeps serving alice.
func TestHTTPTenantSessionsAreTheirs(t *testing.T) {
	_, url := tenantServer(t, nil)
	code, id, _ := rawPost(t, url, aliceToken, "", initBody)
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: status %d, session %q", code, id)
	}
	rawPost(t, url, aliceToken, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	callBody := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"mine"}}}`
	if code, _, body := rawPost(t, url, bobToken, id, callBody); code != http.StatusForbidden || strings.Contains(body, "mine") {
		t.Errorf("bob on alice's session: status %d, body %q", code, body)
	}
	if code, _, _ := rawPost(t, url, "", id, callBody); code != http.StatusUnauthorized {
		t.Errorf("no token on alice's session: status %d", code)
	}
	if code, _, body := rawPost(t, url, aliceToken, id, callBody); code != http.StatusOK || !strings.Contains(body, "mine") {
		t.Errorf("alice on her session: status %d, body %q", code, body)
	}
	// DELETE and GET are requests of the session too.
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, url+Path, nil)
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Authorization", "Bearer "+bobToken)
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("bob's %s of alice's session: status %d", method, resp.StatusCode)
		}
	}
	if code, _, body := rawPost(t, url, aliceToken, id, callBody); code != http.StatusOK || !strings.Contains(body, "mine") {
		t.Errorf("alice's session after bob's DELETE: status %d, body %q", code, body)
	}
}

// TestHTTPTenantStateless: each tenant's stateless callers share a session
// of that tenant's actor, never another tenant's.
func TestHTTPTenantStateless(t *testing.T) {
	s, url := tenantServer(t, &Options{Stateless: true})
	for _, c := range []struct {
		token  string
		denied bool
	}{{aliceToken, false}, {bobToken, true}, {aliceToken, false}} {
		cs, err := connectHTTPURL(url, bearerHeader(c.token), nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if r := call(t, cs, "echo", map[string]any{"text": "x"}); r.IsError != c.denied {
			t.Errorf("%s: echo failed %v, want %v: %s", c.token, r.IsError, c.denied, text(t, r))
		}
		cs.Close()
	}
	a, b := s.http.tenants[0].statelessMS, s.http.tenants[1].statelessMS
	if a == nil || b == nil || a == b {
		t.Fatalf("stateless servers of alice and bob: %p %p", a, b)
	}
}

// TestHTTPTenantEviction: when every slot is taken, a tenant's new
// session evicts that tenant's own idle session before another's.
func TestHTTPTenantEviction(t *testing.T) {
	_, url := tenantServer(t, &Options{MaxSessions: 2})
	_, alice, _ := rawPost(t, url, aliceToken, "", initBody)
	_, bob1, _ := rawPost(t, url, bobToken, "", initBody)
	_, bob2, _ := rawPost(t, url, bobToken, "", initBody)
	if alice == "" || bob1 == "" || bob2 == "" {
		t.Fatalf("sessions %q %q %q", alice, bob1, bob2)
	}
	ping := `{"jsonrpc":"2.0","id":3,"method":"ping"}`
	if code, _, _ := rawPost(t, url, aliceToken, alice, ping); code != http.StatusOK {
		t.Errorf("alice's session was evicted for bob's (status %d)", code)
	}
	if code, _, _ := rawPost(t, url, bobToken, bob1, ping); code != http.StatusNotFound {
		t.Errorf("bob's older session: status %d, want 404 (evicted)", code)
	}
}

// TestTenantOptions: options that cannot be served are refused by Serve
// and make the handler answer 500, never serve open.
func TestTenantOptions(t *testing.T) {
	rt := testRuntime(t)
	ns := newSessionFunc(rt)
	for name, opts := range map[string]*Options{
		"same token twice":    {Tenants: []Tenant{{Name: "a", Token: aliceToken, NewSession: ns}, {Name: "b", Token: aliceToken, NewSession: ns}}},
		"token with a space":  {Tenants: []Tenant{{Name: "a", Token: "alice token", NewSession: ns}}},
		"empty token":         {Tenants: []Tenant{{Name: "a", NewSession: ns}}},
		"token and tenants":   {BearerToken: bobToken, Tenants: []Tenant{{Name: "a", Token: aliceToken, NewSession: ns}}},
		"no session function": {Tenants: []Tenant{{Name: "a", Token: aliceToken}}},
	} {
		t.Run(name, func(t *testing.T) {
			s := New(rt, nil, opts)
			if name == "no session function" {
				// Valid options; the session cannot start: 500, nothing served.
				ts := httptest.NewServer(s.Handler())
				defer ts.Close()
				if code, _, _ := rawPost(t, ts.URL, aliceToken, "", initBody); code != http.StatusInternalServerError {
					t.Errorf("status %d", code)
				}
				return
			}
			err := s.ListenAndServe(context.Background(), "127.0.0.1:0")
			if fault.CodeOf(err) != fault.InvalidInput {
				t.Errorf("ListenAndServe: %v", err)
			}
			ts := httptest.NewServer(s.Handler())
			defer ts.Close()
			for _, tok := range []string{"", aliceToken, bobToken} {
				if code, _, _ := rawPost(t, ts.URL, tok, "", initBody); code != http.StatusInternalServerError {
					t.Errorf("token %q: status %d, want 500", tok, code)
				}
			}
		})
	}
}
