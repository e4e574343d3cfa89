#!/usr/bin/env bash
# Installs the pinned MCP clients the end-to-end suite drives capkit with
# (e2e/tsclient/package.json and package-lock.json: the TypeScript SDK and
# the Inspector CLI) into a cache folder, and prints that folder.
# Idempotent: nothing is fetched when the cache already holds this lock.
#
#   bash scripts/need-node-sdk.sh        # prints e.g. /root/.cache/capkit-node
#
# The e2e tests find the folder through CAPKIT_NODE_MODULES (set it to the
# printed folder's node_modules) or at the default place below.
#
# Why npm install and not npm ci: the Inspector depends (through vite) on
# an optional Windows-only package the registry does not serve, which npm
# ci counts as a lock out of sync; npm install with the committed lock
# installs exactly its versions all the same.
set -euo pipefail
cd "$(dirname "$0")/.."

src=e2e/tsclient
dir="${CAPKIT_NODE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/capkit-node}"
command -v node >/dev/null || { echo "need-node-sdk: node is not on PATH" >&2; exit 1; }
command -v npm >/dev/null || { echo "need-node-sdk: npm is not on PATH" >&2; exit 1; }

want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$dir/.capkit-lock" 2>/dev/null || true)" != "$want" ] || [ ! -d "$dir/node_modules/@modelcontextprotocol/sdk" ]; then
	mkdir -p "$dir"
	cp "$src/package.json" "$src/package-lock.json" "$dir/"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error >&2
	echo "$want" >"$dir/.capkit-lock"
fi
echo "$dir"
