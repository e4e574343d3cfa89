#!/usr/bin/env bash
# What the audit sinks cost, side by side in one run:
#  1. capkit serve's CPU per call (bench/auditload): read_file of a 4 KiB
#     file over MCP stdio with no sink, the hash-chained file, the
#     PostgreSQL store (a server started for the run: default durability,
#     on a Unix socket), OpenTelemetry (capkit-otel exporting to a loopback
#     OTLP/HTTP collector in auditload) and all three; capkit-otel's CPU is
#     counted with capkit's. CALLS calls a server, ROUNDS rounds, the order
#     rotating.
#  2. what linking the OpenTelemetry SDK into capkit would cost every
#     start: `capkit version`'s package initializers (GODEBUG=inittrace=1:
#     clock and bytes summed) and the binary's size, capkit as built and
#     with audit/telemetry imported (a build overlay of cmd/capkit/main.go),
#     medians of INITS runs each, alternating.
# Needs initdb/pg_ctl (scripts/need-postgres.sh); PG=0 leaves the store out.
# BEFORE=REV also builds capkit at git revision REV and measures it beside
# the work tree's, server for server in each round (before/after rows);
# SINKS=file,otlp measures only those beside none.
#
# Usage: bash bench/audit.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
CALLS=${CALLS:-10000}
ROUNDS=${ROUNDS:-5}
INITS=${INITS:-21}
cache=bench/.cache/audit
rm -rf "$cache" && mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
go build -o "$cache/" ./cmd/capkit ./cmd/capkit-otel ./bench/auditload
before=()
if [ -n "${BEFORE:-}" ]; then
	mkdir -p "$cache/before-src" "$cache/before"
	git archive "$BEFORE" | tar -x -C "$cache/before-src"
	(cd "$cache/before-src" && go build -o "$cache/before/" ./cmd/capkit ./cmd/capkit-otel)
	before=(-before "$cache/before/capkit")
fi

# 2. Start-up with the SDK linked in.
sed 's#^import (#import (\n\t_ "github.com/capkit/capkit/audit/telemetry"#' cmd/capkit/main.go >"$cache/main-otel.go"
printf '{"Replace":{"%s":"%s"}}' "$PWD/cmd/capkit/main.go" "$cache/main-otel.go" >"$cache/overlay.json"
mkdir -p "$cache/linked"
go build -overlay "$cache/overlay.json" -o "$cache/linked/capkit" ./cmd/capkit
inits() { GODEBUG=inittrace=1 "$1" version 2>&1 >/dev/null | awk '/^init / {ms += $5; b += $8} END {printf "%.3f %d\n", ms, b}'; }
: >"$cache/inits.as-built"
: >"$cache/inits.linked"
for _ in $(seq "$INITS"); do
	inits "$cache/capkit" >>"$cache/inits.as-built"
	inits "$cache/linked/capkit" >>"$cache/inits.linked"
done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for v in as-built linked; do
	bin=$cache/capkit
	[ "$v" = linked ] && bin=$cache/linked/capkit
	printf '%-9s init %s ms, %s KiB; binary %s MB\n' "$v" \
		"$(cut -d' ' -f1 "$cache/inits.$v" | median)" \
		"$(cut -d' ' -f2 "$cache/inits.$v" | median | awk '{printf "%.0f", $1/1024}')" \
		"$(stat -c %s "$bin" | awk '{printf "%.1f", $1/1e6}')"
done

# 1. CPU per call, with the store on a PostgreSQL server of the run's own.
pgurl=
if [ "${PG:-1}" != 0 ]; then
	bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
	pg=$(mktemp -d /tmp/capkit-pgaudit-XXXXXX)
	as=()
	if [ "$(id -u)" -eq 0 ]; then
		id capkit-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin capkit-pg
		chown capkit-pg: "$pg"
		as=(runuser -u capkit-pg --)
	fi
	(cd "$pg" && "${as[@]}" "$bin/initdb" -D "$pg/data" -U postgres --auth=trust >/dev/null)
	(cd "$pg" && "${as[@]}" "$bin/pg_ctl" -D "$pg/data" -l "$pg/log" -w -o "-c listen_addresses= -c unix_socket_directories=$pg" start >/dev/null)
	trap '(cd "$pg" && "${as[@]}" "$bin/pg_ctl" -D "$pg/data" -m immediate -w stop >/dev/null); rm -rf "$pg"' EXIT
	pgurl="postgres://postgres@/postgres?host=$pg"
fi
"$cache/auditload" -capkit "$cache/capkit" "${before[@]}" -sinks "${SINKS:-}" -dir "$cache/run" -pg "$pgurl" -calls "$CALLS" -rounds "$ROUNDS" 2>"$cache/servers.log"
load_line
