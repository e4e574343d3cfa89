#!/usr/bin/env bash
# Fixed-file catalog and script overheads, from the Go benchmarks:
#   - Catalog.Read of a 64 KiB entry vs one pread(2) of the same bytes into
#     a fresh buffer (goal: within 1.5x);
#   - tool.call from a script (in process, and in a worker process) vs a
#     direct Session.Call of the same tool.
# The benchmarks of each pair alternate, COUNT rounds (the machine is
# shared, so load drifts); the median ns/op is kept and ratios are capkit's
# time / the baseline's (1.0 = as fast).
#
# Usage: bash bench/catalog-script.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
COUNT=${COUNT:-5}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
go test -c -o "$out.fc" ./filecatalog
go test -c -o "$out.sc" ./serve/script
trap 'rm -f "$out" "$out.fc" "$out.sc"' EXIT
for _ in $(seq "$COUNT"); do
	for b in CatalogRead64K Pread64K; do
		(cd filecatalog && "$out.fc" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 20000x) >>"$out"
	done
	for b in SessionCall ScriptToolCall ScriptToolCallWorker; do
		(cd script && "$out.sc" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 1s) >>"$out"
	done
done
med() { grep "^Benchmark$1-" "$out" | awk '{print $3}' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
cat_ns=$(med CatalogRead64K) pread_ns=$(med Pread64K)
sess_ns=$(med SessionCall) in_ns=$(med ScriptToolCall) w_ns=$(med ScriptToolCallWorker)
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); go: $(go version | cut -d' ' -f3); count: $COUNT (median)"
printf '| operation | capkit | baseline | ratio (capkit/baseline) |\n|---|---|---|---|\n'
printf '| Catalog.Read 64 KiB vs pread 64 KiB | %s ns | %s ns | %s |\n' "$cat_ns" "$pread_ns" "$(ratio "$cat_ns" "$pread_ns")"
printf '| tool.call in process vs Session.Call | %s ns | %s ns | %s |\n' "$in_ns" "$sess_ns" "$(ratio "$in_ns" "$sess_ns")"
printf '| tool.call in a worker vs Session.Call | %s ns | %s ns | %s |\n' "$w_ns" "$sess_ns" "$(ratio "$w_ns" "$sess_ns")"
