#!/usr/bin/env bash
# Installs the pinned MCP servers the end-to-end suite puts behind capkit
# as upstreams (e2e/upstreams/package.json and package-lock.json:
# server-everything and server-memory) into a cache folder, and prints
# that folder. Idempotent: nothing is fetched when the cache already holds
# this lock.
#
#   bash scripts/need-mcp-servers.sh     # prints e.g. /root/.cache/capkit-mcp-servers
#
# The e2e tests find the folder through CAPKIT_MCP_SERVERS (set it to the
# printed folder's node_modules) or at the default place below.
set -euo pipefail
cd "$(dirname "$0")/.."

src=e2e/upstreams
dir="${CAPKIT_MCP_SERVERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capkit-mcp-servers}"
command -v node >/dev/null || { echo "need-mcp-servers: node is not on PATH" >&2; exit 1; }
command -v npm >/dev/null || { echo "need-mcp-servers: npm is not on PATH" >&2; exit 1; }

want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/.capkit-lock" 2>/dev/null || true)" != "$want" ] || [ ! -d "$dir/node_modules/@modelcontextprotocol/server-everything" ]; then
	mkdir -p "$dir"
	cp "$src/package.json" "$src/package-lock.json" "$dir/"
	npm ci --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
	echo "$want" >"$dir/.capkit-lock"
fi
echo "$dir"
