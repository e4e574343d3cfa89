#!/usr/bin/env bash
# Script provenance's cost (issue 26: at most 1.3x): one script of 10,000
# tool calls and the computations around them (provWorkflow in
# serve/script/bench_test.go: each argument formatted, each result
# branched on, sliced and collected, the list joined) without labels and
# with them, side by side. The runs alternate off, on, off, on, ... ROUNDS
# times, in process and in a worker process (as run_script runs); each run
# is one process running the script N times. It prints, per mode, the
# median wall time of one script (ns/op) and the median CPU time of one
# (user + sys of the process, every thread, the collector's included,
# divided by the runs), and the ratios with labels / without.
#
# Usage: bash bench/provenance.sh      (from the repository root; ROUNDS=7 N=5)
#        PROFILE=DIR bash bench/provenance.sh   also writes a CPU profile of each mode to DIR
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
ROUNDS=${ROUNDS:-7}
N=${N:-5}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go test -c -o "$tmp/script.test" ./serve/script
for _ in $(seq "$ROUNDS"); do
	for mode in off on off-worker on-worker; do
		/usr/bin/time -f "cpu %U %S" -o "$tmp/time" \
			"$tmp/script.test" -test.run '^$' -test.bench "^BenchmarkScriptProvenance\$/^$mode\$" -test.benchtime "${N}x" >"$tmp/out"
		ns=$(awk '/^BenchmarkScriptProvenance/ {print $3}' "$tmp/out")
		cpu=$(awk -v n="$N" '/^cpu/ {printf "%.0f", ($2 + $3) * 1e9 / n}' "$tmp/time") # b.Loop: exactly N scripts
		echo "$mode $ns $cpu" >>"$tmp/runs"
	done
done
if [ -n "${PROFILE:-}" ]; then
	mkdir -p "$PROFILE"
	for mode in off on; do
		"$tmp/script.test" -test.run '^$' -test.bench "^BenchmarkScriptProvenance\$/^$mode\$" -test.benchtime 20x -test.cpuprofile "$PROFILE/$mode.prof" >/dev/null
	done
	cp "$tmp/script.test" "$PROFILE/script.test"
fi
med() { awk -v m="$1" -v f="$2" '$1 == m {print $f}' "$tmp/runs" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
ms() { awk -v a="$1" 'BEGIN {printf "%.1f", a / 1e6}'; }
echo "rounds: $ROUNDS, $N scripts per run (median of the runs)"
printf '| mode | wall off | wall on | ratio | CPU off | CPU on | ratio |\n|---|---|---|---|---|---|---|\n'
for m in "" -worker; do
	woff=$(med "off$m" 2) won=$(med "on$m" 2) coff=$(med "off$m" 3) con=$(med "on$m" 3)
	printf '| %s | %s ms | %s ms | %s | %s ms | %s ms | %s |\n' "$([ -z "$m" ] && echo 'in process' || echo 'in a worker')" \
		"$(ms "$woff")" "$(ms "$won")" "$(ratio "$won" "$woff")" \
		"$(ms "$coff")" "$(ms "$con")" "$(ratio "$con" "$coff")"
done
load_line
