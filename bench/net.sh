#!/usr/bin/env bash
# Side-by-side figures for the net group, in one run:
#  1. a 100 MiB body from a loopback HTTPS server (bench/netload serve, a
#     fresh CA) fetched by `capkit fetch` (policy exception for 127.0.0.1,
#     body to stdout, SHA-256 receipt) and by curl (--cacert, -o /dev/null);
#     each $REPS times, alternating; the median wall time is kept and the
#     ratio is curl's time / capkit's time (capkit's throughput as a
#     fraction of curl's; >= 0.8 is the goal).
#  2. reserve+settle against bare durable transactions (one INSERT and
#     COMMIT each) with 8 concurrent clients on the same store and
#     settings: SQLite (WAL, synchronous=FULL) and PostgreSQL (a server
#     started for the run with default durability: fsync and
#     synchronous_commit on; both sides keep their 8 connections open).
#     $SECONDS_PER s per side in $ROUNDS slices, the sides alternating
#     (and which goes first), so that the load of a shared machine falls
#     on both alike. ratio_pairs compares reserve+settle pairs with bare
#     transactions one for one (the goal: >= 0.8); ratio_tx counts each
#     pair as two transactions; cpu_us_* is the CPU time (this process and
#     the local PostgreSQL server's) per transaction or pair.
# Needs curl, and initdb/pg_ctl (scripts/need-postgres.sh) for PostgreSQL.
#
# Usage: bash bench/net.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
REPS=${REPS:-5}
SECONDS_PER=${SECONDS_PER:-5}
ROUNDS=${ROUNDS:-8}
cache=bench/.cache/net
rm -rf "$cache" && mkdir -p "$cache"
machine_line
go build -o "$cache/capkit" ./cmd/capkit
go build -o "$cache/netload" ./bench/netload

"$cache/netload" serve -dir "$cache" -size $((100 * 1024 * 1024)) &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$cache/url" ] && break; sleep 0.1; done
url=$(cat "$cache/url")

now() { date +%s.%N; }
time_cmd() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null 2>&1
	t1=$(now)
	echo "$t1 - $t0" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

: >"$cache/curl.times"
: >"$cache/capkit.times"
for _ in $(seq "$REPS"); do
	time_cmd curl -sf --cacert "$cache/ca.pem" -o /dev/null "$url" >>"$cache/curl.times"
	time_cmd "$cache/capkit" fetch "$url" --policy "$cache/http.json" --task bench >>"$cache/capkit.times"
done
c=$(median <"$cache/curl.times")
k=$(median <"$cache/capkit.times")
printf '100 MiB over loopback HTTPS: curl %.3f s (%.0f MiB/s), capkit fetch %.3f s (%.0f MiB/s), ratio %.2f\n' \
	"$c" "$(echo "100 / $c" | bc -l)" "$k" "$(echo "100 / $k" | bc -l)" "$(echo "$c / $k" | bc -l)"

"$cache/netload" budget -store "$cache/sqlite-root" -clients 8 -seconds "$SECONDS_PER" -rounds "$ROUNDS"

# A PostgreSQL server with default durability, on a Unix socket, as an
# unprivileged user (it refuses to run as root).
bin=$(dirname "$(ls /usr/lib/postgresql/*/bin/initdb | tail -1)")
pg=$(mktemp -d /tmp/capkit-pgbench-XXXXXX)
as=()
if [ "$(id -u)" -eq 0 ]; then
	id capkit-pg >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin capkit-pg
	chown capkit-pg: "$pg"
	as=(runuser -u capkit-pg --)
fi
(cd "$pg" && "${as[@]}" "$bin/initdb" -D "$pg/data" -U postgres --auth=trust >/dev/null)
(cd "$pg" && "${as[@]}" "$bin/pg_ctl" -D "$pg/data" -l "$pg/log" -w -o "-c listen_addresses= -c unix_socket_directories=$pg" start >/dev/null)
trap 'kill $server 2>/dev/null || true; (cd "$pg" && "${as[@]}" "$bin/pg_ctl" -D "$pg/data" -m immediate -w stop >/dev/null); rm -rf "$pg"' EXIT
"$cache/netload" budget -store "postgres://postgres@/postgres?host=$pg" -clients 8 -seconds "$SECONDS_PER" -rounds "$ROUNDS"
load_line
