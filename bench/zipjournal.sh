#!/usr/bin/env bash
# Side-by-side: capkit zip extract (with SHA-256 verification of every
# member against a manifest, fsync of every file and directory, no-replace
# publication) vs unzip, on one 200 MiB archive in the page cache; and
# durable journal appends per second (one fdatasync each, Go benchmark).
# Each extraction runs $REPS times, alternating, into a fresh directory; the
# median wall time is kept. Ratios are unzip's time / capkit's time (> 1:
# capkit faster). unzip neither verifies digests nor syncs, so "unzip +
# sync -f" is the like-for-like durable figure. Files live in bench/.cache
# (git-ignored).
#
# Usage: bash bench/zipjournal.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
REPS=${REPS:-3}
cache=bench/.cache
mkdir -p "$cache"
command -v unzip >/dev/null || { apt-get update -qq && apt-get install -y -qq unzip; }
go build -o "$cache/capkit" ./cmd/capkit

# 200 MiB in 100 files of 2 MiB: half random bytes, half compressible text.
src=$cache/zipsrc
if [ ! -f "$src/.done" ]; then
	rm -rf "$src" && mkdir -p "$src/rand" "$src/text"
	for i in $(seq 0 49); do
		head -c 2097152 /dev/urandom >"$src/rand/r$i.bin"
		(set +o pipefail; yes "line $i of a compressible log file with some repeated words in it" | head -c 2097152 >"$src/text/t$i.txt")
	done
	touch "$src/.done"
fi
archive=$cache/200m.zip
manifest=$cache/200m.manifest
if [ ! -f "$archive" ] || [ ! -f "$manifest" ]; then
	rm -f "$archive" "$manifest"
	(cd "$src" && ../capkit zip create ../200m.zip rand/*.bin text/*.txt) >"$manifest"
fi
cat "$archive" >/dev/null # warm the page cache

now() { date +%s.%N; }
time_cmd() {
	local t0 t1
	t0=$(now)
	"$@" >/dev/null
	t1=$(now)
	awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.4f", b - a}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
unzipsync() { unzip -q "$1" -d "$2" && sync -f "$2"; }
clean() { rm -rf "$cache/x-capkit" "$cache/x-unzip" "$cache/x-unzipsync"; sync; }

declare -A times
for _ in $(seq "$REPS"); do
	clean
	times[capkit]+="$(time_cmd "$cache/capkit" zip extract "$archive" "$cache/x-capkit" --expect "$manifest") "
	times[unzip]+="$(time_cmd unzip -q "$archive" -d "$cache/x-unzip") "
	times[unzipsync]+="$(time_cmd unzipsync "$archive" "$cache/x-unzipsync") "
done
diff -r "$cache/x-capkit" "$cache/x-unzip" >/dev/null || { echo "extracted trees differ" >&2; exit 1; }
clean
c=$(echo "${times[capkit]}" | tr ' ' '\n' | grep . | median)
u=$(echo "${times[unzip]}" | tr ' ' '\n' | grep . | median)
us=$(echo "${times[unzipsync]}" | tr ' ' '\n' | grep . | median)
size=$(stat -c %s "$archive")
echo "archive: $size bytes, 100 members, 200 MiB uncompressed"
echo "capkit zip extract (verify + fsync): ${c}s  [${times[capkit]}]"
echo "unzip:                               ${u}s  [${times[unzip]}]  ratio unzip/capkit $(awk -v a="$u" -v b="$c" 'BEGIN{printf "%.2f", a/b}')"
echo "unzip + sync -f:                     ${us}s  [${times[unzipsync]}]  ratio $(awk -v a="$us" -v b="$c" 'BEGIN{printf "%.2f", a/b}')"
echo
go test -run '^$' -bench 'Append|Verify' -benchtime 2000x ./store/journal | grep -E '^Benchmark'
