package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wirePeer is a client of a stdio server over pipes that sends request
// lines and returns response lines as they are.
type wirePeer struct {
	w *os.File
	r *bufio.Reader
}

func startWirePeer(tb testing.TB, s *Server) *wirePeer {
	tb.Helper()
	sr, cw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	cr, sw, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		s.ServeStdio(context.Background(), sr, sw)
		close(done)
	}()
	tb.Cleanup(func() {
		cw.Close()
		<-done
		sw.Close()
		cr.Close()
	})
	p := &wirePeer{w: cw, r: bufio.NewReader(cr)}
	if _, err := p.call(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wire","version":"1"}}}`); err != nil {
		tb.Fatal(err)
	}
	if _, err := io.WriteString(cw, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n"); err != nil {
		tb.Fatal(err)
	}
	return p
}

// call sends one request and returns the next line that is not a
// notification.
func (p *wirePeer) call(req string) (string, error) {
	if _, err := io.WriteString(p.w, req+"\n"); err != nil {
		return "", err
	}
	for {
		line, err := p.r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.Contains(line[:min(len(line), 64)], `"method"`) {
			return line, nil
		}
	}
}

// FuzzReadFileWire checks read_file's responses on the wire (the direct
// path, escapeASCII), for any content and window: a success is the
// kernel's result with its text quoted as jsontext quotes it, byte for
// byte; a failure (not escaped by this package) is one response.
func FuzzReadFileWire(f *testing.F) {
	root := f.TempDir()
	srv, newSession := fileToolsServer(f, root)
	p := startWirePeer(f, srv)
	ks, err := newSession(context.Background())
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(root, "f.txt")
	long := strings.Repeat("\tif x := lookup(\"key\", 1); x != nil { return x } // line\n", 40)
	for _, s := range []string{
		"", "\n", "\n\n\n", "no final newline", "a\r\nb\r\n\r\nc",
		long, long + "tail without newline",
		"ascii then é and 日本 and 🎉\n" + long,
		"bad \xff utf8\n" + long, long + "\xe2\x82 cut rune\n",
		"ctl \x01\x02\x1f\x7f \b\f\v\n" + long,
		"\u2028\u2029 separators\n<>&'\"\\\n" + long,
		strings.Repeat("x", 5000) + "\n" + strings.Repeat("y", 70) + "\n",
		"nul \x00 byte\n",
		"\x89PNG\r\n\x1a\n not really",
	} {
		f.Add([]byte(s), uint16(0), uint16(0), uint8(0))
		f.Add([]byte(s), uint16(2), uint16(3), uint8(0))
		f.Add([]byte(s), uint16(0), uint16(0), uint8(2))
	}
	f.Fuzz(func(t *testing.T, content []byte, offset, limit uint16, tail uint8) {
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		args := fmt.Sprintf(`{"path":%q`, path)
		if offset > 0 {
			args += fmt.Sprintf(`,"offset":%d`, offset)
		}
		if limit > 0 {
			args += fmt.Sprintf(`,"limit":%d`, limit)
		}
		if tail > 0 {
			args += fmt.Sprintf(`,"tail":%d`, tail)
		}
		args += "}"
		got, err := p.call(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","arguments":` + args + `}}`)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ks.Call(context.Background(), "read_file", json.RawMessage(args))
		if err != nil {
			if !strings.Contains(got, `"isError":true`) {
				t.Fatalf("the call failed (%v), but the response is %.300q", err, got)
			}
			return
		}
		defer res.Release()
		if res.Image != nil {
			return // content that sniffs as an image: not text
		}
		want := `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + quoteRef(res.Text) +
			`"}],"structuredContent":` + string(res.Structured) + "}}\n"
		if got != want {
			t.Fatalf("response differs:\n got  %.600q\n want %.600q", got, want)
		}
	})
}
