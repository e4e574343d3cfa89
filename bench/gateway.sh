#!/usr/bin/env bash
# The gateway side by side (issue 23), in one run, with the TypeScript
# SDK's client (bench/gateway.mjs):
#  - everything__echo through capkit serve (server-everything behind it,
#    contained, approved; and with contain = false) against echo called on
#    the same server directly:
#    p50 and p90 of ROUNDS rounds of CALLS calls each, alternating, with
#    a fourth line: the same server behind bench/linerelay, a process that
#    only copies lines (the floor of any process between the two);
#  - the first tools/list's bytes of capkit serve with an upstream of 200
#    tools (approved, deferred behind tool_search) and without it.
# The figures go to bench/RESULTS.md ("Gateway").
#
#   bash bench/gateway.sh            # CALLS=500 ROUNDS=3 by default
#   CALLS=20000 bash bench/gateway.sh  # the servers warm (node's JIT done)
#
# Needs Go, Node 20 and npm; the servers come from scripts/need-mcp-servers.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line

calls=${CALLS:-500}
rounds=${ROUNDS:-3}
servers=$(bash scripts/need-mcp-servers.sh)/node_modules
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/capkit" ./cmd/capkit
go build -o "$work/linerelay" ./bench/linerelay
cp bench/gateway.mjs "$work/"
ln -s "$servers" "$work/node_modules"
everything="$servers/@modelcontextprotocol/server-everything/dist/index.js"

cat >"$work/echo.toml" <<TOML
[upstream.everything]
command = ["node", "$everything", "stdio"]
read_only = ["$(readlink -f "$servers")"]

[actor.assistant]
effects = ["tool_search", "upstream:everything"]

[tool."everything__echo"]
max_calls = 1000000
TOML
sed 's/^read_only = .*/contain = false/' "$work/echo.toml" >"$work/echo-uncontained.toml"
cat >"$work/many.toml" <<TOML
[upstream.many]
command = ["node", "$work/gateway.mjs", "serve", "200"]
read_only = ["$work", "$(readlink -f "$servers")"]

[actor.assistant]
effects = ["tool_search", "upstream:many"]
TOML
cat >"$work/none.toml" <<TOML
[actor.assistant]
effects = ["tool_search"]
TOML
"$work/capkit" upstream approve --config "$work/echo.toml" >/dev/null
"$work/capkit" upstream approve --config "$work/echo-uncontained.toml" >/dev/null
"$work/capkit" upstream approve --config "$work/many.toml" >/dev/null

for r in $(seq "$rounds"); do
	echo "round $r direct:  $(node "$work/gateway.mjs" echo "$calls" node "$everything" stdio)"
	echo "round $r capkit:  $(node "$work/gateway.mjs" echo "$calls" "$work/capkit" serve --config "$work/echo.toml")"
	echo "round $r capkit, contain = false:  $(node "$work/gateway.mjs" echo "$calls" "$work/capkit" serve --config "$work/echo-uncontained.toml")"
	echo "round $r linerelay:  $(node "$work/gateway.mjs" echo "$calls" "$work/linerelay" node "$everything" stdio)"
done
echo "tools/list, capkit with 200 upstream tools: $(node "$work/gateway.mjs" list "$work/capkit" serve --config "$work/many.toml")"
echo "tools/list, capkit without them:            $(node "$work/gateway.mjs" list "$work/capkit" serve --config "$work/none.toml")"
echo "tools/list, the 200-tool server directly:   $(node "$work/gateway.mjs" list node "$work/gateway.mjs" serve 200)"
load_line
