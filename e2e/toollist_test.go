package e2e

import (
	"context"
	"encoding/json"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/limits"
)

// hotTools are what capkit serve --root DIR lists first.
var hotTools = []string{"edit_file", "glob", "grep", "list_dir", "list_roots", "read_file", "tool_search", "write_file"}

// TestHotToolListSize: the tools/list a model pays for on every turn,
// that of capkit serve --root DIR as the Go SDK's client and the
// TypeScript SDK's receive it, stays within limits.HotToolListMaxBytes
// (bench/RESULTS.md has the figure and its tokens).
func TestHotToolListSize(t *testing.T) {
	root := t.TempDir()
	cmd := exec.Command(capkit, "serve", "--root", root)
	c := connect(t, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	res, err := c.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, hotTools) {
		t.Fatalf("listed first: %v, want %v", names, hotTools)
	}
	data, err := json.Marshal(res.Tools)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Go SDK client: %d tools, %d bytes of tools/list JSON", len(res.Tools), len(data))
	if len(data) > limits.HotToolListMaxBytes {
		t.Errorf("the hot tools cost %d bytes of tools/list, over limits.HotToolListMaxBytes (%d)", len(data), limits.HotToolListMaxBytes)
	}

	out := runTS(t, nodeModules(t), tsPlan{Transport: "stdio", Command: capkit, Args: []string{"serve", "--root", root}, Cwd: root, Steps: []tsStep{{Op: "list"}}})
	list := out.Results[0]
	t.Logf("TypeScript SDK client: %d tools, %d bytes of tools/list JSON", len(list.Tools), list.Bytes)
	if len(list.Tools) != len(hotTools) || list.Bytes == 0 || list.Bytes > limits.HotToolListMaxBytes {
		t.Errorf("TypeScript SDK client: %d tools in %d bytes, over limits.HotToolListMaxBytes (%d)", len(list.Tools), list.Bytes, limits.HotToolListMaxBytes)
	}
}
