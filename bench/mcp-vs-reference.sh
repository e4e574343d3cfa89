#!/usr/bin/env bash
# The MCP workload of issue 2, side by side: capkit serve (built from this
# repository) and the reference MCP filesystem server
# (@modelcontextprotocol/server-filesystem, installed with npm into
# bench/.cache), one after the other in one run, driven by the same client
# (bench/mcpload, the Go MCP SDK over stdio). Writes the section
# "MCP server vs reference filesystem server" of bench/RESULTS.md.
#
#   bash bench/mcp-vs-reference.sh             # the full workload
#   SCALE=0.2 bash bench/mcp-vs-reference.sh   # fewer calls per scenario
#
# Needs Go, Node (18 or later) and npm. Linux only (server CPU and memory
# are read from /proc).
set -euo pipefail
cd "$(dirname "$0")/.."

ref_version=2026.8.31
cache=bench/.cache
mkdir -p "$cache"
ref="$cache/node_modules/@modelcontextprotocol/server-filesystem"
if ! grep -qs "\"version\": \"$ref_version\"" "$ref/package.json"; then
	npm install --prefix "$cache" --no-audit --no-fund --silent \
		"@modelcontextprotocol/server-filesystem@$ref_version"
fi
go build -o "$cache/capkit" ./cmd/capkit
go build -o "$cache/mcpload" ./bench/mcpload

fixture=$(mktemp -d)
trap 'rm -rf "$fixture"' EXIT

command="${SCALE:+SCALE=$SCALE }${STARTUPS:+STARTUPS=$STARTUPS }bash bench/mcp-vs-reference.sh"
"$cache/mcpload" -dir "$fixture" -scale "${SCALE:-1}" -startups "${STARTUPS:-20}" \
	-command "$command" -results bench/RESULTS.md -notes bench/mcp-vs-reference.notes.md \
	-server "capkit=$PWD/$cache/capkit serve --root {dir}" \
	-server "reference=node $PWD/$ref/dist/index.js {dir}"
echo "bench/RESULTS.md: section \"MCP server vs reference filesystem server\" written"
