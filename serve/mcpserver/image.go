package mcpserver

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/kernel"
)

// imageResult renders a result that carries an image (kernel.Imager): the
// text, then the image as MCP image content. Such results take the SDK's
// encoder on both paths; they are rare, and the fast paths are for text.
func imageResult(res *kernel.Result) *mcp.CallToolResult {
	r := &mcp.CallToolResult{Content: []mcp.Content{
		&mcp.TextContent{Text: res.Text},
		&mcp.ImageContent{MIMEType: res.Image.MediaType, Data: res.Image.Data},
	}}
	if len(res.Structured) > 0 {
		r.StructuredContent = res.Structured
	}
	return r
}

// contentResult renders a result given as content blocks
// (kernel.Result.Content: another server's, passed on as they are),
// decoded as the SDK decodes a result's content, so that a block it
// would not send is refused here rather than sent broken. Such results
// take the SDK's encoder, as images do.
func contentResult(res *kernel.Result) (*mcp.CallToolResult, error) {
	var b bytes.Buffer
	b.WriteString(`{"content":[`)
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(c)
	}
	b.WriteString("]}")
	r := new(mcp.CallToolResult)
	if err := json.Unmarshal(b.Bytes(), r); err != nil {
		return nil, fault.Wrap(fault.Internal, err, "the result's content blocks cannot be sent")
	}
	if len(res.Structured) > 0 {
		r.StructuredContent = res.Structured
	}
	return r, nil
}

// blockResult renders a result that is not text alone (an image, content
// blocks), or returns nil for one that is.
func (b *binding) blockResult(res *kernel.Result) *mcp.CallToolResult {
	switch {
	case res.Content != nil:
		r, err := contentResult(res)
		if err != nil {
			return b.faultResult(err)
		}
		return r
	case res.Image != nil:
		return imageResult(res)
	}
	return nil
}
