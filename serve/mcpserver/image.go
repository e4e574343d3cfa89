package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
