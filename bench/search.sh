#!/usr/bin/env bash
# Literal passages vs ripgrep, and the lexical index vs raw FTS5 through the
# same driver and vs C SQLite (Python's sqlite3 module). Run from the
# repository root: REPS=7 bash bench/search.sh (PASSAGES_ONLY=1 stops after
# the passages). Figures: see bench/RESULTS.md.
set -euo pipefail
REPS=${REPS:-7}
. bench/machine.sh
machine_line
cache=$PWD/bench/.cache/search
mkdir -p "$cache"
command -v rg >/dev/null || { apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null; }
py=/usr/bin/python3
go build -o "$cache/capkit" ./cmd/capkit

# A 128 MiB source: Go's own sources, concatenated and repeated, cut at a line.
src=$cache/go-src.txt
if [ ! -s "$src" ]; then
	find "$(go env GOROOT)/src" -name '*.go' -type f | sort | xargs cat > "$cache/go1.txt"
	$py - "$cache/go1.txt" "$src" <<'PY'
import sys
d = open(sys.argv[1], 'rb').read()
n = 128 << 20
out = (d * (n // len(d) + 1))[:n]
open(sys.argv[2], 'wb').write(out[:out.rfind(b'\n') + 1])
PY
fi
cat "$src" > /dev/null

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
wall() { # wall seconds of one run of "$@"
	local t0 t1
	t0=$(date +%s.%N); "$@" > /dev/null; t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc -l
}
echo "passages find vs rg -F -c on $(stat -c %s "$src") bytes ($REPS runs each, alternating, median):"
for q in deadline sync.Mutex 'func ('; do
	a=(); b=()
	for _ in $(seq "$REPS"); do
		a+=("$(wall "$cache/capkit" passages find "$src" --query "$q" --json)")
		b+=("$(wall rg -F -c "$q" "$src")")
	done
	ca=$(printf '%s\n' "${a[@]}" | median); cb=$(printf '%s\n' "${b[@]}" | median)
	lib=$(CAPKIT_PASSAGES_BENCH_FILE=$src CAPKIT_PASSAGES_BENCH_QUERY=$q go test -run '^$' -bench FindFile -benchtime 10x -count "$REPS" ./search/passages |
		awk '/^BenchmarkFindFile/ {print $3 / 1e9}' | median)
	printf '  %-12s capkit CLI %.4f s  FindFile (in process) %.4f s  rg %.4f s  capkit/rg throughput: CLI %.2f  in process %.2f\n' \
		"$q" "$ca" "$lib" "$cb" "$(echo "$cb / $ca" | bc -l)" "$(echo "$cb / $lib" | bc -l)"
done
for _ in 1 2 3; do wall "$cache/capkit" version; done | median | xargs printf '  capkit process start (capkit version): %.4f s\n'
[ -z "${PASSAGES_ONLY:-}" ] || exit 0

docs=$cache/docs
[ -s "$docs/corpus.txt" ] || $py bench/search.py corpus "$docs"
db=$cache/corpus.db
query="w5 w40"
export CAPKIT_LEX_BENCH_ADD=$docs/add.txt CAPKIT_LEX_BENCH_CORPUS=$docs/corpus.txt CAPKIT_LEX_BENCH_DB=$db CAPKIT_LEX_BENCH_QUERY=$query
echo "lexindex (go test -bench; add: one batch of 10,000 per run, 3 runs; search: 300 queries per run, 3 runs):"
go test -run '^$' -bench 'Add$|RawAdd' -benchtime 1x -count 3 ./search/lexindex | grep -E '^Benchmark'
go test -run '^$' -bench 'Search' -benchtime 300x -count 3 ./search/lexindex | grep -E '^Benchmark'
echo "C SQLite through Python's sqlite3 (median seconds: add 10,000 docs; one query):"
$py bench/search.py sqlite "$docs" "$db" "$query"
