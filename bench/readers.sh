#!/usr/bin/env bash
# Document readers beside the standard library, from the Go benchmarks on
# the same inputs (a 1 MiB mixed JSON document; an 8 MiB, 8-column CSV of
# about 83,000 rows, plain and gzipped):
#   - textjson.Validate (strict: duplicate names, non-finite numbers, depth,
#     UTF-8, positions) vs encoding/json Valid;
#   - textjson.Decode (the same checks, exact numbers) vs encoding/json
#     Unmarshal into any;
#   - tabular.ScanFunc / Scan / ScanGzip (bounds, dialect detection, UTF-8
#     check, counts) vs encoding/csv Read / ReadAll / gzip + Read.
# Each pair runs back to back, COUNT rounds (the machine is shared and its
# load drifts, so a pair's two runs see similar load); a round's ratio is
# capkit's throughput / the standard library's, and the table shows the
# median throughputs and the median of the rounds' ratios (goal: >= 0.8).
#
# Usage: bash bench/readers.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
COUNT=${COUNT:-7}
TIME=${TIME:-500ms}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go test -c -o "$out/textjson.test" ./parse/textjson
go test -c -o "$out/tabular.test" ./parse/tabular
# metric PKG BENCH UNIT: run one benchmark and print the value before UNIT.
metric() {
	(cd "$1" && "$out/$1.test" -test.run '^$' -test.bench "^Benchmark$2\$" -test.benchtime "$TIME") |
		awk -v u="$3" '/^Benchmark/ {for (i = 2; i <= NF; i++) if ($i == u) print $(i-1)}'
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
pairs=(
	"JSON: textjson.Validate vs json.Valid|textjson|Validate|StdValid|MB/s"
	"JSON: textjson.Decode vs json.Unmarshal(any)|textjson|Decode|StdUnmarshalAny|MB/s"
	"JSON: textjson.Canonical vs json.Unmarshal(any)|textjson|Canonical|StdUnmarshalAny|MB/s"
	"CSV: tabular.ScanFunc vs csv.Reader.Read|tabular|ScanFunc|StdCSVRead|rows/s"
	"CSV: tabular.Scan (rows kept) vs csv.Reader.ReadAll|tabular|ScanAll|StdCSVReadAll|rows/s"
	"CSV: tabular.Scan, filter + 2 columns, vs csv.Reader.Read|tabular|ScanFilter|StdCSVRead|rows/s"
	"CSV gzip: tabular.ScanFunc vs gzip + csv.Reader.Read|tabular|ScanGzip|StdGzipCSVRead|rows/s"
)
for _ in $(seq "$COUNT"); do
	for i in "${!pairs[@]}"; do
		IFS='|' read -r _ pkg a b unit <<<"${pairs[$i]}"
		x=$(metric "$pkg" "$a" "$unit") y=$(metric "$pkg" "$b" "$unit")
		echo "$x" >>"$out/$i.a"
		echo "$y" >>"$out/$i.b"
		awk -v a="$x" -v b="$y" 'BEGIN {printf "%.3f\n", a / b}' >>"$out/$i.r"
	done
done
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); go: $(go version | cut -d' ' -f3); rounds: $COUNT x $TIME per benchmark (medians)"
printf '| operation | capkit | standard library | ratio (capkit/std) |\n|---|---|---|---|\n'
for i in "${!pairs[@]}"; do
	IFS='|' read -r label _ _ _ unit <<<"${pairs[$i]}"
	printf '| %s | %s %s | %s %s | %.2f |\n' "$label" "$(median <"$out/$i.a")" "$unit" "$(median <"$out/$i.b")" "$unit" "$(median <"$out/$i.r")"
done
