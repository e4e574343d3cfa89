#!/usr/bin/env bash
# The project's test command (the README's, and CI's through .ci/run).
# Needs Go 1.26 on PATH; Debian and npm packages the tests need are
# installed by the need-*.sh scripts, everything else comes from Go modules.
#   FUZZTIME=30s bash scripts/test.sh   runs each fuzz target longer.
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime="${FUZZTIME:-4s}"
export GOFLAGS="${GOFLAGS:--mod=readonly}"

bash scripts/need-postgres.sh
# ip for the network-namespace tests; they skip without it, except under CI=true.
bash scripts/need-iproute2.sh || [ "${CI:-}" != true ]
# curl for the network-policy tests; they skip without it, except under CI=true.
bash scripts/need-curl.sh || [ "${CI:-}" != true ]
# chromium (headless) for the dashboard's browser tests; they skip without it, except under CI=true.
bash scripts/need-chromium.sh || [ "${CI:-}" != true ]

echo "== MCP clients for the end-to-end suite (TypeScript SDK, Inspector)"
# Under CI=true the suite fails without them; elsewhere it skips.
if node_cache=$(bash scripts/need-node-sdk.sh); then
	export CAPKIT_NODE_MODULES="$node_cache/node_modules"
elif [ "${CI:-}" = true ]; then
	exit 1
else
	echo "scripts/need-node-sdk.sh failed: the TypeScript client tests will skip"
fi

echo "== MCP servers the end-to-end suite puts behind capkit (server-everything, server-memory)"
if servers=$(bash scripts/need-mcp-servers.sh); then
	export CAPKIT_MCP_SERVERS="$servers/node_modules"
elif [ "${CI:-}" = true ]; then
	exit 1
else
	echo "scripts/need-mcp-servers.sh failed: the upstream server tests will skip"
fi

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go test -race"
go test -race -timeout 20m ./...

echo "== the allocation property of every tool, without -race (it skips under it)"
go test -count=1 -run '^TestAllocationProperty' ./host/

echo "== examples/hostloop (a module of its own: the providers' Go SDKs stay out of capkit's go.mod)"
# Not under -race: the loops are sequential, their concurrency is the
# kernel's, tested with -race above, and the SDKs are large to instrument.
# -mod=mod: the module builds capkit from ../.., so a module capkit's go.mod
# adds or raises is added to its go.mod here rather than failing the run.
(cd examples/hostloop && GOFLAGS=-mod=mod go vet ./... && GOFLAGS=-mod=mod go test -count=1 ./...)

echo "== fuzz targets, ${fuzztime} each"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for pkg in $(go list ./...); do
	for target in $(go test -list '^Fuzz' "$pkg" | grep '^Fuzz' || true); do
		echo "-- $pkg $target"
		# A new interesting input is minimized for at most 2 s, so a short
		# run ends on time. When the fuzzer still reports only its own
		# deadline ("context deadline exceeded", no failing input written),
		# the target is run once more; a failing input always fails.
		fuzz() { go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$pkg" >"$log" 2>&1; }
		fuzz || {
			if grep -q 'context deadline exceeded' "$log" && ! grep -q 'Failing input written' "$log"; then
				echo "   the fuzzer stopped at its own deadline; running $target once more"
				fuzz || { cat "$log"; exit 1; }
			else
				cat "$log"; exit 1
			fi
		}
	done
done
echo "== all tests passed"
