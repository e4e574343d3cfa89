#!/usr/bin/env bash
# What the first tools/list costs a model, capkit beside the reference MCP
# filesystem server: capkit serve --root DIR (its default hot set) and
# @modelcontextprotocol/server-filesystem DIR, listed by the TypeScript
# SDK's client (bench/toollist.mjs). Prints bytes of the tools as JSON and
# tokens (Anthropic's published tokenizer, @anthropic-ai/tokenizer, which
# predates Claude 3 and so approximates today's models; and OpenAI's
# o200k_base), for the whole listing and for the part a model is given
# (name, description, input schema). The figures go to bench/RESULTS.md
# ("tools/list"); e2e TestHotToolListSize holds capkit's to
# limits.HotToolListMaxBytes.
#
#   bash bench/toollist.sh
#
# Needs Go, Node (18 or later) and npm; installs the pinned packages into
# bench/.cache.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line

cache=bench/.cache/toollist
pins=("@modelcontextprotocol/sdk@1.32.2" "@modelcontextprotocol/server-filesystem@2026.8.31"
	"@anthropic-ai/tokenizer@0.0.4" "gpt-tokenizer@3.0.1")
mkdir -p "$cache"
if [ "$(cat "$cache/.pins" 2>/dev/null || true)" != "${pins[*]}" ]; then
	npm install --prefix "$cache" --no-audit --no-fund --silent "${pins[@]}"
	echo "${pins[*]}" >"$cache/.pins"
fi
go build -o "$cache/capkit" ./cmd/capkit
cp bench/toollist.mjs "$cache/"

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
echo "capkit serve --root DIR:"
node "$cache/toollist.mjs" "$PWD/$cache/capkit" serve --root "$root"
echo "reference filesystem server:"
node "$cache/toollist.mjs" node "$PWD/$cache/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" "$root"
