package limits

import "time"

// What capkit accepts from an MCP client's roots (roots/list), when the
// host lets client roots narrow the granted ones.
const (
	// MCPClientRootsTimeout bounds the wait for a client's roots/list
	// answer; past it the session has no root until the next call asks
	// again.
	MCPClientRootsTimeout = 10 * time.Second
	// MCPClientRootsMax bounds how many roots of a client's list are
	// considered; a longer list is refused (the session gets no root).
	MCPClientRootsMax = 64
)
