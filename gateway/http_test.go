package gateway

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/internal/testkit/nettest"
	"github.com/capkit/capkit/net/fetch"
)

type echoIn struct {
	Text string `json:"text"`
}

// httpUpstream serves an MCP server with one tool, echo, over Streamable
// HTTP on loopback (HTTPS, the test CA), refusing requests without the
// bearer token; /moved redirects to it. It returns the policy a client
// dials it under and the port.
func httpUpstream(t *testing.T, token string, seen *atomic.Int32) (*fetch.Policy, int) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "http-upstream", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Echoes text."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/mcp", http.StatusTemporaryRedirect)
	})
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		seen.Add(1)
		h.ServeHTTP(w, r)
	}))
	ca := nettest.NewCA(t)
	port := ca.Serve(t, mux, "127.0.0.1", "localhost")
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "ca.pem"), ca.PEM, 0o600)
	path := filepath.Join(dir, "policy.json")
	os.WriteFile(path, []byte(fmt.Sprintf(`{"format": 1, "ports": [%d], "private_destinations": ["127.0.0.0/8"], "ca_file": "ca.pem"}`, port)), 0o600)
	p, err := fetch.LoadPolicy(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return p, port
}

// TestHTTPUpstream: a Streamable HTTP upstream is dialled under its
// policy (a loopback server only its reviewed exception admits), with
// its secret header on every request; its tools are reviewed and called
// as a stdio server's; without the exception it cannot be reached, and a
// redirect is not followed (the secret would go with it).
func TestHTTPUpstream(t *testing.T) {
	t.Parallel()
	token := "tok-" + fmt.Sprint(os.Getpid())
	tokenFile := filepath.Join(t.TempDir(), "bearer")
	os.WriteFile(tokenFile, []byte("Bearer "+token+"\n"), 0o600)
	var seen atomic.Int32
	policy, port := httpUpstream(t, token, &seen)
	up := Upstream{Name: "web", URL: fmt.Sprintf("https://localhost:%d/mcp", port), Policy: policy,
		SecretHeaders: map[string]string{"Authorization": tokenFile}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reviews, err := ReviewUpstreams(ctx, []Upstream{up}, &Lock{}, nil)
	if err != nil || reviews[0].Err != nil {
		t.Fatalf("review: %v %v", err, reviews)
	}
	lock := &Lock{}
	if _, err := Approve(lock, reviews, nil); err != nil {
		t.Fatal(err)
	}
	g, err := New([]Upstream{up}, lock, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tl, ok := g.Tool("web__echo")
	if !ok {
		t.Fatalf("tools %v", g.Tools())
	}
	out, err := g.Call(ctx, Key{Actor: "a"}, tl, []byte(`{"text":"over http"}`), 1000, nil)
	if err != nil || out.Text != "over http" {
		t.Fatalf("call: %v %v", out, err)
	}
	if seen.Load() == 0 {
		t.Error("no authorized request reached the server")
	}

	strict, err := fetch.ParsePolicy(ctx, []byte(`{"format": 1}`), "")
	if err != nil {
		t.Fatal(err)
	}
	for name, u := range map[string]Upstream{
		"no exception": {Name: "web", URL: up.URL, Policy: strict, SecretHeaders: up.SecretHeaders},
		"redirect":     {Name: "web", URL: strings.Replace(up.URL, "/mcp", "/moved", 1), Policy: policy, SecretHeaders: up.SecretHeaders},
		"plain http":   {Name: "web", URL: strings.Replace(up.URL, "https:", "http:", 1), Policy: policy},
	} {
		g, _ := New([]Upstream{u}, lock, nil)
		before := seen.Load()
		_, err := g.Call(ctx, Key{Actor: "a"}, mustTool(t, g, "web__echo"), []byte(`{"text":"x"}`), 1000, nil)
		g.Close()
		if fault.CodeOf(err) != fault.Unavailable {
			t.Errorf("%s: %v", name, err)
		}
		if name == "redirect" && seen.Load() != before {
			t.Errorf("the redirect was followed")
		}
	}
}

func mustTool(t testing.TB, g *Gateway, name string) *Tool {
	t.Helper()
	tl, ok := g.Tool(name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}
