package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/capkit/capkit/kernel"
)

// Each tools/call's audit events name its JSON-RPC id (kernel.WithRequest).
// The SDK keeps a request's id in a context key it does not export, so
// the transports hand it to the handler in the request's
// mcp.RequestExtra.Header under requestIDHeader: over HTTP, the POST's own
// headers (set from the body's id, replacing whatever a client sent under
// that name: every call has an id); over stdio, a header set made for the
// request.
const requestIDHeader = "Capkit-Audit-Request"

// auditRequestID is how id is named in the audit log: an integer as
// written, a string as sent when it is short and plain, else a digest of
// it (an id is caller text: it must not bring content into the log).
func auditRequestID(id jsonrpc.ID) string {
	switch v := id.Raw().(type) {
	case int64:
		return strconv.FormatInt(v, 10)
	case string:
		if plainID(v) {
			return v
		}
		sum := sha256.Sum256([]byte(v))
		return "sha256:" + hex.EncodeToString(sum[:8])
	}
	return ""
}

// plainID reports whether a string id is 1 to 64 letters, digits and
// "._:-".
func plainID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// withRequestID is ctx naming the request a handler serves, when the
// transport passed its id.
func withRequestID(ctx context.Context, extra *mcp.RequestExtra) context.Context {
	if extra == nil {
		return ctx
	}
	if id := extra.Header.Get(requestIDHeader); id != "" {
		return kernel.WithRequest(ctx, id)
	}
	return ctx
}

// stdioExtra is the RequestExtra the stdio transport gives a tools/call
// the SDK handles.
func stdioExtra(id jsonrpc.ID) *mcp.RequestExtra {
	return &mcp.RequestExtra{Header: http.Header{requestIDHeader: {auditRequestID(id)}}}
}
