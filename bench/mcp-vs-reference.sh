#!/usr/bin/env bash
# The MCP workload of issue 2, side by side: capkit serve (built from this
# repository) and the reference MCP filesystem server
# (@modelcontextprotocol/server-filesystem, installed with npm into
# bench/.cache), one after the other in one run, driven by the same client:
# bench/mcpload with the Go MCP SDK's client, then with the TypeScript
# SDK's (bench/mcpload/tsclient.mjs, the client Claude Code uses, one call
# at a time; the SDK pinned by e2e/tsclient and installed by
# scripts/need-node-sdk.sh). Writes the sections "MCP server vs reference
# filesystem server" and "..., TypeScript SDK client" of bench/RESULTS.md.
#
#   bash bench/mcp-vs-reference.sh             # the full workload, both clients
#   SCALE=0.2 bash bench/mcp-vs-reference.sh   # fewer calls per scenario
#   CLIENTS=ts ONLY=small_read,read_4mib,edit_1mib bash bench/mcp-vs-reference.sh
#
# Needs Go, Node (18 or later) and npm. Linux only (server CPU and memory
# are read from /proc).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line

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
config=$(mktemp --suffix=.toml)
trap 'rm -rf "$fixture" "$config"' EXIT
# read_4mib reads the whole file: read_file's default output bound is
# token-sized (a window of about 100 KiB), so the host raises it, as a
# host that wants whole files would.
cat >"$config" <<TOML
[[root]]
path = "$fixture"
[tool.read_file]
max_output_bytes = 8388608
TOML

command="${SCALE:+SCALE=$SCALE }${STARTUPS:+STARTUPS=$STARTUPS }${CLIENTS:+CLIENTS=\"$CLIENTS\" }${ONLY:+ONLY=$ONLY }bash bench/mcp-vs-reference.sh"
section="MCP server vs reference filesystem server"
for client in ${CLIENTS:-go ts}; do
	flags=(-command "$command" -results bench/RESULTS.md -scale "${SCALE:-1}" -startups "${STARTUPS:-20}" ${ONLY:+-only "$ONLY"})
	case "$client" in
	go)
		flags+=(-section "$section" -notes bench/mcp-vs-reference.notes.md) ;;
	ts)
		node_cache=$(bash scripts/need-node-sdk.sh)
		mkdir -p "$cache/tsclient"
		cp bench/mcpload/tsclient.mjs "$cache/tsclient/"
		ln -sfn "$node_cache/node_modules" "$cache/tsclient/node_modules"
		flags+=(-section "$section, TypeScript SDK client" -notes bench/mcp-vs-reference.ts-notes.md \
			-ts "$PWD/$cache/tsclient/tsclient.mjs" -startups 0) ;;
	*)
		echo "CLIENTS: unknown client $client (go or ts)" >&2; exit 2 ;;
	esac
	"$cache/mcpload" -dir "$fixture" "${flags[@]}" \
		-server "capkit=$PWD/$cache/capkit --config $config serve" \
		-server "reference=node $PWD/$ref/dist/index.js {dir}"
	echo "bench/RESULTS.md: section for the $client client written"
done
