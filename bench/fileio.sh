#!/usr/bin/env bash
# Side-by-side: capkit file digest vs sha256sum, capkit file copy vs cp, on
# one 1 GiB file of random bytes in the page cache. Each command runs
# $REPS times, alternating, and the median wall time is kept; ratios are
# other tool's time / capkit's time (1.0 = as fast, > 1 = capkit faster).
#
# capkit's copy fsyncs the copy before publishing it; plain cp does not,
# so cp is measured both as is and followed by `sync FILE` (the durable
# equivalent). Files live in bench/.cache (git-ignored).
#
# Usage: bash bench/fileio.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
REPS=${REPS:-3}
cache=bench/.cache
mkdir -p "$cache"
src=$cache/1g.bin
if [ "$(stat -c %s "$src" 2>/dev/null || echo 0)" != 1073741824 ]; then
	head -c 1073741824 /dev/urandom >"$src.tmp" && mv "$src.tmp" "$src"
fi
go build -o "$cache/capkit" ./cmd/capkit
cat "$src" >/dev/null # warm the page cache

now() { date +%s.%N; }
# time_cmd CMD...: prints the wall seconds of one run
time_cmd() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
rmcopies() { rm -f "$cache/copy-cp" "$cache/copy-cpsync" "$cache/copy-capkit"; }
cpsync() { cp "$1" "$2" && sync "$2"; }

declare -A times
for _ in $(seq "$REPS"); do
	times[sha256sum]+="$(time_cmd sha256sum "$src") "
	times[digest]+="$(time_cmd "$cache/capkit" file digest "$src") "
	rmcopies; sync
	times[cp]+="$(time_cmd cp "$src" "$cache/copy-cp") "
	rmcopies; sync
	times[cpsync]+="$(time_cmd cpsync "$src" "$cache/copy-cpsync") "
	rmcopies; sync
	times[copy]+="$(time_cmd "$cache/capkit" file copy "$src" "$cache/copy-capkit") "
	cmp -s "$src" "$cache/copy-capkit" || { echo "copy differs" >&2; exit 1; }
	rmcopies; sync
done
med() { tr ' ' '\n' <<<"${times[$1]}" | grep . | median; }
sha=$(med sha256sum) dig=$(med digest) cp=$(med cp) cps=$(med cpsync) cop=$(med copy)
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
mibs() { awk -v t="$1" 'BEGIN {printf "%.0f", 1024 / t}'; }
sha_ok=no; grep -qw sha_ni /proc/cpuinfo && sha_ok=yes
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), sha_ni: $sha_ok, $(df -T "$cache" | awk 'NR==2{print $2}')"
echo "go: $(go version | cut -d' ' -f3), sha256sum: $(sha256sum --version | head -1), reps: $REPS (median)"
printf '| operation | capkit | other | ratio (other/capkit) |\n|---|---|---|---|\n'
printf '| digest 1 GiB vs sha256sum | %.3f s (%s MiB/s) | %.3f s | %s |\n' "$dig" "$(mibs "$dig")" "$sha" "$(ratio "$sha" "$dig")"
printf '| copy 1 GiB vs cp | %.3f s (%s MiB/s) | %.3f s | %s |\n' "$cop" "$(mibs "$cop")" "$cp" "$(ratio "$cp" "$cop")"
printf '| copy 1 GiB vs cp + sync FILE | %.3f s | %.3f s | %s |\n' "$cop" "$cps" "$(ratio "$cps" "$cop")"
