package hostloop

import (
	"encoding/json"

	"github.com/capkit/capkit/kernel/catalog"
	"github.com/capkit/capkit/serve/mcpserver"
)

// renderMCP is e as an MCP server lists it (capkit serve's tools/list).
func renderMCP(e *catalog.Entry, strict bool) (*rendered, error) {
	t, err := mcpserver.Tool(e)
	if err != nil {
		return nil, err
	}
	def, err := json.Marshal(t)
	if err != nil {
		return nil, err
	}
	r := &rendered{spec: Spec{Name: e.Name, Definition: def}, lax: def}
	if strict {
		r.spec.NotStrict = noStrictMode(MCP)
	}
	return r, nil
}
