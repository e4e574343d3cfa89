package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/serve/mcpserver"
)

// fileServer serves the file tools on a writable root and a read-only one.
type fileServer struct {
	rt         *kernel.Runtime
	srv        *mcpserver.Server
	rw, ro     string
	newSession func(context.Context) (*kernel.Session, error)
}

func newFileServer(t *testing.T) *fileServer {
	t.Helper()
	b := kernel.NewBuilder(nil)
	if err := tools.RegisterTools(b, &tools.ToolOptions{Events: policy.NewEvents()}); err != nil {
		t.Fatal(err)
	}
	rt, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	fs := &fileServer{rt: rt, rw: t.TempDir(), ro: t.TempDir()}
	fs.newSession = func(context.Context) (*kernel.Session, error) {
		w, err := capability.New("model", []capability.Effect{
			capability.ReadFile, capability.WriteFile, capability.EditFile, capability.MoveFile,
			capability.List, capability.Search, capability.ToolSearch,
		}, capability.Scope{Roots: []string{fs.rw}})
		if err != nil {
			return nil, err
		}
		r, err := capability.New("model", []capability.Effect{capability.ReadFile, capability.List, capability.Search},
			capability.Scope{Roots: []string{fs.ro}})
		if err != nil {
			return nil, err
		}
		return rt.NewSession("model", []capability.Capability{w, r}, nil)
	}
	fs.srv = mcpserver.New(rt, fs.newSession, nil)
	return fs
}

func (fs *fileServer) connectStdio(t *testing.T, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	return fs.dialStdio(t, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, copts), version)
}

func (fs *fileServer) dialStdio(t *testing.T, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fs.srv.ServeStdio(ctx, sr, sw) }()
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: cr, Writer: cw}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		<-done
		cancel()
		sw.Close()
	})
	return cs
}

func (fs *fileServer) connectHTTP(t *testing.T, copts *mcp.ClientOptions, version string) *mcp.ClientSession {
	t.Helper()
	return fs.dialHTTP(t, mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, copts), version)
}

func (fs *fileServer) dialHTTP(t *testing.T, client *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(fs.srv.Handler())
	t.Cleanup(ts.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + mcpserver.Path, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// outcome is a call's text and, for a failure, its fault code.
func outcome(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, fault.Code) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError {
		return text, ""
	}
	if res.StructuredContent != nil {
		t.Errorf("%s: a failure carries structuredContent", name)
	}
	data, _ := json.Marshal(res.Meta[mcpserver.FaultMetaKey])
	var fi fault.Report
	if err := json.Unmarshal(data, &fi); err != nil {
		t.Fatal(err)
	}
	return text, fi.Code
}

// TestFileTools drives the file tools over every transport: the flow of
// issue 2's end-to-end list (read, edit without reading, edit after
// reading, edit after an outside change, a denied write, discovery).
func TestFileTools(t *testing.T) {
	type connect func(*fileServer, *testing.T, *mcp.ClientOptions, string) *mcp.ClientSession
	for name, conn := range map[string]connect{
		"stdio": (*fileServer).connectStdio,
		"http":  (*fileServer).connectHTTP,
	} {
		for _, version := range []string{"", "2025-11-25"} {
			t.Run(name+"/"+version, func(t *testing.T) {
				fs := newFileServer(t)
				changed := make(chan struct{}, 4)
				cs := conn(fs, t, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					changed <- struct{}{}
				}}, version)
				a := filepath.Join(fs.rw, "a.txt")
				b := filepath.Join(fs.rw, "b.txt")
				for _, p := range []string{a, b} {
					if err := os.WriteFile(p, []byte("alpha\nbeta\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.WriteFile(filepath.Join(fs.ro, "r.txt"), []byte("ro\n"), 0o644); err != nil {
					t.Fatal(err)
				}

				res, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				listed := map[string]bool{}
				for _, tool := range res.Tools {
					listed[tool.Name] = true
				}
				for _, want := range []string{"read_file", "write_file", "edit_file", "list_dir", "glob", "grep", "tool_search"} {
					if !listed[want] {
						t.Errorf("%s not listed", want)
					}
				}
				if listed["move_file"] {
					t.Error("move_file listed before discovery")
				}

				if _, code := outcome(t, cs, "edit_file", map[string]any{"path": "a.txt", "old_string": "beta", "new_string": "gamma"}); code != fault.Conflict {
					t.Errorf("edit without reading: %q", code)
				}
				if text, code := outcome(t, cs, "read_file", map[string]any{"path": "a.txt"}); code != "" || !strings.Contains(text, "2\tbeta") {
					t.Fatalf("read_file: %q %q", code, text)
				}
				if _, code := outcome(t, cs, "edit_file", map[string]any{"path": "a.txt", "old_string": "beta", "new_string": "gamma"}); code != "" {
					t.Errorf("edit after reading: %q", code)
				}
				if got, _ := os.ReadFile(a); string(got) != "alpha\ngamma\n" {
					t.Errorf("a.txt after edit: %q", got)
				}

				outcome(t, cs, "read_file", map[string]any{"path": "b.txt"})
				if err := os.WriteFile(b, []byte("changed outside\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				if _, code := outcome(t, cs, "edit_file", map[string]any{"path": "b.txt", "old_string": "changed", "new_string": "x"}); code != fault.Conflict {
					t.Errorf("edit after an outside change: %q", code)
				}
				if got, _ := os.ReadFile(b); string(got) != "changed outside\n" {
					t.Errorf("b.txt touched: %q", got)
				}

				if _, code := outcome(t, cs, "write_file", map[string]any{"path": filepath.Join(fs.ro, "new.txt"), "content": "x"}); code != fault.Denied {
					t.Errorf("write under the read-only root: %q", code)
				}
				if _, err := os.Stat(filepath.Join(fs.ro, "new.txt")); err == nil {
					t.Error("file created under the read-only root")
				}

				if text, code := outcome(t, cs, "tool_search", map[string]any{"query": "move rename"}); code != "" || !strings.Contains(text, "move_file") {
					t.Fatalf("tool_search: %q %q", code, text)
				}
				select {
				case <-changed:
				case <-time.After(10 * time.Second):
					t.Fatal("no tools/list_changed after tool_search")
				}
				res, err = cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				found := false
				for _, tool := range res.Tools {
					found = found || tool.Name == "move_file"
				}
				if !found {
					t.Error("move_file not listed after tool_search")
				}
			})
		}
	}
}

// TestReadFileOverStdioIsTheKernelResult: a large read_file result reaches
// the client exactly as the kernel produced it, through the stdio fast
// paths.
func TestReadFileOverStdioIsTheKernelResult(t *testing.T) {
	fs := newFileServer(t)
	var sb strings.Builder
	for i := 0; sb.Len() < 600_000; i++ {
		fmt.Fprintf(&sb, "\tline %d: \"quoted\" \\ tab\there <&> é 日本 🎉\n", i)
	}
	if err := os.WriteFile(filepath.Join(fs.rw, "big.txt"), []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	args := map[string]any{"path": "big.txt", "limit": 100000}
	ks, err := fs.newSession(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(args)
	want, err := ks.Call(context.Background(), "read_file", raw)
	if err != nil {
		t.Fatal(err)
	}
	for _, version := range []string{"", "2025-11-25"} {
		cs := fs.connectStdio(t, nil, version)
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != want.Text {
			t.Errorf("version %q: text differs from the kernel's (%d bytes, want %d)", version, len(got), len(want.Text))
		}
		structured, _ := json.Marshal(res.StructuredContent)
		var a, b any
		json.Unmarshal(structured, &a)
		json.Unmarshal(want.Structured, &b)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("version %q: structured %s, want %s", version, structured, want.Structured)
		}
	}
}
