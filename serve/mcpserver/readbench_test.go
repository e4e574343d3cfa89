package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/capkit/capkit/capability"
	"github.com/capkit/capkit/files/policy"
	"github.com/capkit/capkit/files/tools"
	"github.com/capkit/capkit/kernel"
	"github.com/capkit/capkit/limits"
)

// benchSource is n lines of source-like text (a tab, quotes), each width
// bytes long with its newline: the file bench/mcp-vs-reference.sh reads.
func benchSource(n, width int) []byte {
	var b bytes.Buffer
	for i := range n {
		l := fmt.Sprintf("\tif x := lookup(\"key %06d\", %d); x != nil { return x } // line", i, i%97)
		b.WriteString(fmt.Sprintf("%-*.*s\n", width-1, width-1, l))
	}
	return b.Bytes()
}

// fileToolsServer serves the file tools on one root, with read_file's
// output bound raised to 8 MiB as the bench's configuration does; newSession
// starts another session like the server's.
func fileToolsServer(tb testing.TB, root string) (srv *Server, newSession func(context.Context) (*kernel.Session, error)) {
	kb := kernel.NewBuilder(&kernel.Options{PolicyOverride: func(p kernel.Policy) kernel.Policy {
		if p.Name == "read_file" {
			p.MaxOutputBytes = 8 * limits.MiB
		}
		return p
	}})
	if err := tools.RegisterTools(kb, &tools.ToolOptions{Events: policy.NewEvents()}); err != nil {
		tb.Fatal(err)
	}
	rt, err := kb.Build()
	if err != nil {
		tb.Fatal(err)
	}
	newSession = func(context.Context) (*kernel.Session, error) {
		c, err := capability.New("model", []capability.Effect{capability.ReadFile}, capability.Scope{Roots: []string{root}})
		if err != nil {
			return nil, err
		}
		return rt.NewSession("model", []capability.Capability{c}, nil)
	}
	return New(rt, newSession, nil), newSession
}

// BenchmarkStdioReadFile is read_file over stdio pipes and socket pairs
// on the files of bench/mcp-vs-reference.sh: 100 lines (4 KiB) and 65,536 lines (4 MiB).
func BenchmarkStdioReadFile(b *testing.B) {
	root := b.TempDir()
	for _, f := range []struct {
		name  string
		lines int
		width int
		limit int
	}{{"4KiB", 100, 41, 0}, {"4MiB", 65536, 64, 100000}} {
		path := filepath.Join(root, f.name+".txt")
		if err := os.WriteFile(path, benchSource(f.lines, f.width), 0o644); err != nil {
			b.Fatal(err)
		}
		for _, sockets := range []bool{false, true} {
			name := f.name + "/pipes"
			if sockets {
				name = f.name + "/sockets"
			}
			b.Run(name, func(b *testing.B) { benchReadFile(b, root, path, f.limit, sockets) })
		}
	}
}

// benchReadFile is one of BenchmarkStdioReadFile.
func benchReadFile(b *testing.B, root, path string, limit int, sockets bool) {
	srv, _ := fileToolsServer(b, root)
	p := startBenchPeerOn(b, srv, sockets)
	defer p.stop()
	args := fmt.Sprintf(`{"path":%q,"limit":%d}`, path, limit)
	if limit == 0 {
		args = fmt.Sprintf(`{"path":%q}`, path)
	}
	benchToolsCall(b, p, "read_file", args)
}
