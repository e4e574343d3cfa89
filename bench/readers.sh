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
# The benchmarks of each pair alternate, COUNT rounds (the machine is
# shared, so load drifts); the median throughput is kept and ratios are
# capkit's throughput / the standard library's (goal: >= 0.8).
#
# Usage: bash bench/readers.sh        (from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
COUNT=${COUNT:-5}
out=$(mktemp)
trap 'rm -f "$out" "$out.tj" "$out.tb"' EXIT
go test -c -o "$out.tj" ./textjson
go test -c -o "$out.tb" ./tabular
for _ in $(seq "$COUNT"); do
	for b in Validate StdValid Decode StdUnmarshalAny Canonical; do
		(cd textjson && "$out.tj" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 1s) >>"$out"
	done
	for b in ScanFunc StdCSVRead ScanAll StdCSVReadAll ScanFilter ScanGzip StdGzipCSVRead; do
		(cd tabular && "$out.tb" -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 1s) >>"$out"
	done
done
# med NAME UNIT: the median of the value printed before UNIT.
med() {
	grep "^Benchmark$1-" "$out" | awk -v u="$2" '{for (i = 2; i <= NF; i++) if ($i == u) print $(i-1)}' |
		sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", a / b}'; }
row() { # label capkit-bench std-bench unit
	local a b
	a=$(med "$2" "$4") b=$(med "$3" "$4")
	printf '| %s | %s %s | %s %s | %s |\n' "$1" "$a" "$4" "$b" "$4" "$(ratio "$a" "$b")"
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); go: $(go version | cut -d' ' -f3); count: $COUNT (median)"
printf '| operation | capkit | standard library | ratio (capkit/std) |\n|---|---|---|---|\n'
row "JSON: textjson.Validate vs json.Valid" Validate StdValid MB/s
row "JSON: textjson.Decode vs json.Unmarshal(any)" Decode StdUnmarshalAny MB/s
row "JSON: textjson.Canonical vs json.Unmarshal(any)" Canonical StdUnmarshalAny MB/s
row "CSV: tabular.ScanFunc vs csv.Reader.Read" ScanFunc StdCSVRead rows/s
row "CSV: tabular.Scan (rows kept) vs csv.Reader.ReadAll" ScanAll StdCSVReadAll rows/s
row "CSV: tabular.Scan, filter + 2 columns, vs csv.Reader.Read" ScanFilter StdCSVRead rows/s
row "CSV gzip: tabular.ScanFunc vs gzip + csv.Reader.Read" ScanGzip StdGzipCSVRead rows/s
