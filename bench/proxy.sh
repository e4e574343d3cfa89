#!/usr/bin/env bash
# The policy proxy must not slow a build: 100 MiB from a loopback HTTPS
# server (bench/netload serve, a fresh CA, the server named localhost),
# side by side in one run, $REPS rounds, each running back to back:
#   direct     curl on the host, no proxy;
#   proxy      the same curl through capkit's proxy (net/egress, bench/netload
#              proxy) on the host's loopback: the proxy's own cost, no
#              container;
#   contained  the same curl inside `capkit run --config` with [run]
#              network (a policy listing localhost, 127.0.0.1 reviewed in):
#              curl's CONNECT goes to the container's 127.0.0.1:3128, which
#              capkit's proxy serves from outside the container and relays
#              to the server. This is the figure the goal is about.
#   netns      no proxy, no capkit: server and curl both inside a fresh
#              network namespace (unshare -rn), to show what this machine's
#              kernel charges for a namespace's own loopback, which the
#              contained curl's first hop crosses.
# Each figure is a median: curl's own download speed (%{speed_download}:
# the transfer alone, so the container's start is not counted), and for
# direct and contained the wall and CPU time (user + system; contained
# counts capkit, its helper and curl together, so the proxy's and the
# container's cost is the difference, container start included). A
# round's ratio is a row's speed / the direct speed of the same round
# (the machine is shared and its load drifts; a round's runs see similar
# load), and the table gives the median of the rounds' ratios (goal for
# contained: >= 0.8). The load average is printed before and after.
# Needs curl, GNU time, unshare and user namespaces.
#
# Usage: bash bench/proxy.sh        (from anywhere)
set -euo pipefail
cd "$(dirname "$0")/.."
REPS=${REPS:-21}
cache=$PWD/bench/.cache/proxy
rm -rf "$cache" && mkdir -p "$cache/root" "$cache/ns"
go build -o "$cache/capkit" ./cmd/capkit
go build -o "$cache/netload" ./bench/netload

# waitfor FILE: until FILE is there and not empty.
waitfor() { for _ in $(seq 100); do [ -s "$1" ] && return; sleep 0.1; done; echo "no $1" >&2; exit 1; }
"$cache/netload" serve -dir "$cache" -size $((100 * 1024 * 1024)) &
pids=$!
trap 'kill $pids 2>/dev/null || true' EXIT
waitfor "$cache/url-name"
waitfor "$cache/run-policy.json"
url=$(cat "$cache/url-name")
"$cache/netload" proxy -policy "$cache/run-policy.json" -addr "$cache/proxy-addr" &
pids="$pids $!"
waitfor "$cache/proxy-addr"
cp "$cache/ca.pem" "$cache/root/ca.pem"
cat >"$cache/capkit.toml" <<TOML
[[root]]
path = "root"
[run]
network = "run-policy.json"
cache = "none"
TOML
# The netns row: server and curl in a namespace of their own.
cat >"$cache/ns/run.sh" <<'SH'
set -e
cd "$(dirname "$0")"
ip link set lo up 2>/dev/null || true
./netload serve -dir . -size $((100 * 1024 * 1024)) &
s=$!
for _ in $(seq 100); do [ -s url-name ] && break; sleep 0.1; done
sleep 0.2
curl -sf --cacert ca.pem -o /dev/null -w '%{speed_download}' "$(cat url-name)"
kill $s
SH
cp "$cache/netload" "$cache/ns/netload"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fmt='%{speed_download}'
echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$cache/rounds"
for _ in $(seq "$REPS"); do
	d=$(/usr/bin/time -f '%e %U %S' -o "$cache/t" curl -sf --cacert "$cache/ca.pem" -o /dev/null -w "$fmt" "$url")
	dt=$(awk '{print $1, $2 + $3}' "$cache/t")
	p=$(https_proxy="http://$(cat "$cache/proxy-addr")" curl -sf --cacert "$cache/ca.pem" -o /dev/null -w "$fmt" "$url")
	c=$(cd "$cache/root" && /usr/bin/time -f '%e %U %S' -o ../t ../capkit --config ../capkit.toml run -- curl -sf --cacert ca.pem -o /dev/null -w "$fmt" "$url")
	ct=$(awk '{print $1, $2 + $3}' "$cache/t")
	rm -f "$cache/ns/url-name"
	n=$(unshare -rn bash "$cache/ns/run.sh")
	# direct proxy contained netns, direct wall cpu, contained wall cpu
	echo "$d $p $c $n $dt $ct" >>"$cache/rounds"
done
col() { awk -v c="$1" '{print $c}' "$cache/rounds" | median; }
ratio() { awk -v c="$1" '{print $c / $1}' "$cache/rounds" | median; }
mib() { echo "$1 / 1048576" | bc -l; }
echo "100 MiB over loopback HTTPS (medians of $REPS rounds):"
printf '  direct     %4.0f MiB/s              wall %.3f s  cpu %.3f s\n' "$(mib "$(col 1)")" "$(col 5)" "$(col 6)"
printf '  proxy      %4.0f MiB/s  ratio %.2f\n' "$(mib "$(col 2)")" "$(ratio 2)"
printf '  contained  %4.0f MiB/s  ratio %.2f  wall %.3f s  cpu %.3f s (capkit run whole)\n' "$(mib "$(col 3)")" "$(ratio 3)" "$(col 7)" "$(col 8)"
printf '  netns      %4.0f MiB/s  ratio %.2f\n' "$(mib "$(col 4)")" "$(ratio 4)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
