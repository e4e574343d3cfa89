package mcpserver

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
)

// fastPath carries the successful tool results of one stdio connection
// past the SDK's encoder.
//
// The tool handler stashes the kernel result and gives the SDK a
// placeholder result instead: empty content and, as structured content, a
// one-member object whose name holds a random per-connection nonce and
// whose value numbers the stashed result. The SDK encodes and post-
// processes that small result as usual (_meta, resultType, the response
// envelope); the connection's Write finds the placeholder in it, takes the
// stashed result, and writes the response with the real content in the
// placeholder's place: the text quoted once, the structured content as the
// kernel encoded it.
//
// Only the connection that created a placeholder ever sees it, and the
// nonce keeps a tool's own output from ever matching: results never pass
// through the placeholder, only their number does.
type fastPath struct {
	// needle is what the SDK's encoding of a placeholder result contains:
	// `"content":[],"structuredContent":{"<name>":`, then the number and '}'.
	needle []byte
	name   string

	pending atomic.Int64
	mu      sync.Mutex
	seq     uint64
	stash   map[uint64]*kernel.Result
}

func newFastPath() *fastPath {
	name := "capkit.fastpath." + rand.Text()
	return &fastPath{
		name:   name,
		needle: []byte(`"content":[],"structuredContent":{"` + name + `":`),
		stash:  map[uint64]*kernel.Result{},
	}
}

// placeholder stashes res and returns the result the SDK encodes instead.
func (f *fastPath) placeholder(res *kernel.Result) *mcp.CallToolResult {
	f.mu.Lock()
	f.seq++
	n := f.seq
	f.stash[n] = res
	f.mu.Unlock()
	f.pending.Add(1)
	return &mcp.CallToolResult{
		Content:           []mcp.Content{},
		StructuredContent: json.RawMessage(`{"` + f.name + `":` + strconv.FormatUint(n, 10) + `}`),
	}
}

// take looks for a placeholder in an encoded result. When it finds one it
// returns the stashed result (removing it) and the encoded result before
// and after the placeholder's content and structured content.
func (f *fastPath) take(result []byte) (res *kernel.Result, before, after []byte, ok bool) {
	if f.pending.Load() == 0 {
		return nil, nil, nil, false
	}
	i := bytes.Index(result, f.needle)
	if i < 0 {
		return nil, nil, nil, false
	}
	rest := result[i+len(f.needle):]
	end := bytes.IndexByte(rest, '}')
	if end <= 0 {
		return nil, nil, nil, false
	}
	n, err := strconv.ParseUint(string(rest[:end]), 10, 64)
	if err != nil {
		return nil, nil, nil, false
	}
	f.mu.Lock()
	res, ok = f.stash[n]
	delete(f.stash, n)
	f.mu.Unlock()
	if !ok {
		return nil, nil, nil, false
	}
	f.pending.Add(-1)
	return res, result[:i], rest[end+1:], true
}
