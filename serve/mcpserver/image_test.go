package mcpserver_test

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestReadFileImage: an image read_file returns reaches the client as
// image content, with the media type sniffed from its bytes (the name says
// .txt), on the stdio direct path, the SDK's path and HTTP.
func TestReadFileImage(t *testing.T) {
	fs := newFileServer(t)
	img := image.NewRGBA(image.Rect(0, 0, 3, 2))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(fs.rw, "pic.txt"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, cs := range map[string]*mcp.ClientSession{
		"stdio direct": fs.connectStdio(t, nil, ""),
		"stdio sdk":    fs.connectStdio(t, nil, "2025-11-25"),
		"http":         fs.connectHTTP(t, nil, ""),
	} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "pic.txt"}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError || len(res.Content) != 2 {
			t.Fatalf("%s: %+v", name, res)
		}
		im, ok := res.Content[1].(*mcp.ImageContent)
		if !ok || im.MIMEType != "image/png" || !bytes.Equal(im.Data, buf.Bytes()) {
			t.Fatalf("%s: content %#v", name, res.Content[1])
		}
	}
}
