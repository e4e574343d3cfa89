package mcpserver_test

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/serve/mcpserver"
)

func fileURI(p string) string { return (&url.URL{Scheme: "file", Path: p}).String() }

// TestClientRootsNarrow: with ClientRoots, a client's roots narrow the
// session's (a subdirectory of a granted root replaces it; roots outside
// are never added, even through a symlink), and after roots/list_changed
// a wider list gives back at most the granted roots.
func TestClientRootsNarrow(t *testing.T) {
	type dial func(*fileServer, *testing.T, *mcp.Client, string) *mcp.ClientSession
	for name, conn := range map[string]dial{
		"stdio": (*fileServer).dialStdio,
		"http":  (*fileServer).dialHTTP,
	} {
		t.Run(name, func(t *testing.T) {
			fs := newFileServer(t)
			fs.srv = mcpserver.New(fs.rt, fs.newSession, &mcpserver.Options{ClientRoots: true})
			rw, ro := resolved(t, fs.rw), resolved(t, fs.ro)
			sub := filepath.Join(rw, "sub")
			outside := t.TempDir()
			writeTestFile(t, filepath.Join(sub, "a.txt"), "in sub\n")
			writeTestFile(t, filepath.Join(rw, "top.txt"), "top\n")
			writeTestFile(t, filepath.Join(ro, "r.txt"), "ro\n")
			writeTestFile(t, filepath.Join(outside, "secret.txt"), "secret\n")
			if err := os.Symlink(outside, filepath.Join(rw, "link")); err != nil {
				t.Fatal(err)
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
			client.AddRoots(&mcp.Root{URI: fileURI(sub)}, &mcp.Root{URI: fileURI(filepath.Join(rw, "link"))}, &mcp.Root{URI: "https://example.invalid/x"})
			cs := conn(fs, t, client, "2025-11-25")

			if text, code := outcome(t, cs, "list_roots", nil); code != "" || !strings.Contains(text, "- "+sub+" (read-write)") || strings.Contains(text, ro) || strings.Contains(text, outside) {
				t.Fatalf("list_roots narrowed: %q %q", code, text)
			}
			for path, want := range map[string]string{
				filepath.Join(sub, "a.txt"):             "",
				filepath.Join(rw, "top.txt"):            "denied",
				filepath.Join(ro, "r.txt"):              "denied",
				filepath.Join(outside, "secret.txt"):    "denied",
				filepath.Join(rw, "link", "secret.txt"): "denied",
			} {
				if _, code := outcome(t, cs, "read_file", map[string]any{"path": path}); string(code) != want {
					t.Errorf("read_file %s: %q, want %q", path, code, want)
				}
			}
			// A wider list gives back the granted roots, never more.
			client.AddRoots(&mcp.Root{URI: fileURI("/")})
			deadline := time.Now().Add(10 * time.Second)
			for {
				text, _ := outcome(t, cs, "list_roots", nil)
				if strings.Contains(text, "- "+rw+" (read-write)") && strings.Contains(text, "- "+ro+" (read-only") {
					if strings.Contains(text, "- / ") {
						t.Fatalf("widened beyond the grants: %q", text)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("roots/list_changed not honoured: %q", text)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if _, code := outcome(t, cs, "read_file", map[string]any{"path": filepath.Join(outside, "secret.txt")}); code != "denied" {
				t.Errorf("outside after widening: %q", code)
			}
		})
	}
}

// TestClientRootsNotAsked: without ClientRoots a client's roots change
// nothing, and on protocol 2026-07-28 (which retires roots) neither.
func TestClientRootsNotAsked(t *testing.T) {
	for _, c := range []struct {
		narrow  bool
		version string
	}{{false, "2025-11-25"}, {true, "2026-07-28"}} {
		fs := newFileServer(t)
		fs.srv = mcpserver.New(fs.rt, fs.newSession, &mcpserver.Options{ClientRoots: c.narrow})
		writeTestFile(t, filepath.Join(fs.rw, "sub", "a.txt"), "a\n")
		client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		client.AddRoots(&mcp.Root{URI: fileURI(filepath.Join(resolved(t, fs.rw), "sub"))})
		cs := fs.dialStdio(t, client, c.version)
		if text, _ := outcome(t, cs, "list_roots", nil); !strings.Contains(text, "- "+fs.rw+" (read-write)") || !strings.Contains(text, "- "+fs.ro+" (read-only") {
			t.Fatalf("%+v: list_roots: %q", c, text)
		}
	}
}

func resolved(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func writeTestFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSessionInstructions: the initialize result carries Instructions
// and what SessionInstructions says for the session.
func TestSessionInstructions(t *testing.T) {
	fs := newFileServer(t)
	fs.srv = mcpserver.New(fs.rt, fs.newSession, &mcpserver.Options{
		Instructions:        "Be brief.",
		SessionInstructions: func(ks *kernel.Session) string { return "roots: " + strings.Join(ks.Capabilities().AllRoots(), ", ") },
	})
	for _, cs := range []*mcp.ClientSession{fs.connectStdio(t, nil, ""), fs.connectHTTP(t, nil, "2025-11-25")} {
		want := "Be brief.\n\nroots: " + fs.rw + ", " + fs.ro
		if got := cs.InitializeResult().Instructions; got != want {
			t.Errorf("instructions %q, want %q", got, want)
		}
	}
}
