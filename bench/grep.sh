#!/usr/bin/env bash
# Side-by-side: capkit grep vs ripgrep vs GNU grep, five searches on a
# large tree (the Go module cache, or $TREE) and on one 1 GiB file of Go
# source (made from the tree's .go files, in bench/.cache).
#
# capkit is measured in process, through the kernel (admission, bounds,
# audit) as `capkit serve` calls it: bench/grepbench, so that process start
# does not count (its cost is measured once, in BENCH_START). rg and grep
# are separate processes (their start is ~1 ms). Each command runs $REPS
# times, alternating, after one warm-up; the median wall time and the
# median CPU time (user+system) are kept. Ratios are capkit's time / the
# other's (< 1: capkit is faster; the goal is <= 2 against rg and < 1
# against grep).
#
# What each searches: everything under the tree, binary files skipped (rg
# -uu; LC_ALL=C grep -rI, since in a UTF-8 locale GNU grep takes a file
# with an invalid sequence for binary; capkit skips files with a NUL in
# their first 8000 bytes, and honours .gitignore files).
# capkit's content mode formats at most head_limit (500) lines but counts
# every match; rg and grep write every line (to a file).
#
# Then every search is compared with ripgrep's: capkit's whole result
# (paged through by grepbench -list) against rg's, as sorted lists of
# path:line entries (content), paths (files_with_matches) and the count
# of each; the script fails if any differ (the differences are left in
# bench/.cache/grep-check).
#
# Usage: bash bench/grep.sh        (from the repository root)
#        CHECK_ONLY=1 bash bench/grep.sh   (the comparison alone)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
REPS=${REPS:-5}
TREE=${TREE:-$(go env GOMODCACHE)}
cache=bench/.cache
mkdir -p "$cache"
if ! command -v rg >/dev/null; then
	apt-get update -qq && apt-get install -y -qq ripgrep >/dev/null
fi
go build -o "$cache/grepbench" ./bench/grepbench
big=$cache/grep-1g.txt # Go source, not named .go: gofmt and vet walk folders
if [ "$(stat -c %s "$big" 2>/dev/null || echo 0)" != 1073741824 ]; then
	: >"$big.tmp"
	while [ "$(stat -c %s "$big.tmp")" -lt 1073741824 ]; do
		# without NUL bytes, so that no tool takes it for binary
		find "$TREE" -name '*.go' -type f -print0 | xargs -0 cat | tr -d '\000' >>"$big.tmp"
	done
	truncate -s 1073741824 "$big.tmp"
	mv "$big.tmp" "$big"
fi
cat "$big" >/dev/null
find "$TREE" -type f -print0 | xargs -0 cat >/dev/null 2>&1 || true # warm the page cache

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# ext_time CMD...: "wall cpu" of one run of an external command
ext_time() {
	# into a file: GNU grep stops at the first match when its output is
	# /dev/null
	/usr/bin/time -f "%e %U %S" -o "$cache/time.out" "$@" >"$cache/grep.out" 2>/dev/null || true
	# the last line: time writes "Command exited with non-zero status 1"
	# first when nothing matched
	tail -n 1 "$cache/time.out" | awk '{printf "%s %.3f\n", $1, $2 + $3}'
}

# run_case WHERE NAME CAPKIT_ARGS PATH RG_ARGS... -- GREP_ARGS...
# capkit's root is PATH, or PATH's directory when PATH is a file.
run_case() {
	local where=$1 name=$2 capargs=$3 path=$4 root=$4
	shift 4
	if [ -f "$path" ]; then
		root=$(dirname "$path")
		capargs="${capargs%\}},\"path\":\"$(basename "$path")\"}"
	fi
	local rgargs=() grepargs=()
	while [ "$1" != "--" ]; do rgargs+=("$1"); shift; done
	shift
	grepargs=("$@")
	local cw=() cc=() rw=() rc=() gw=() gc=()
	"$cache/grepbench" -root "$root" -args "$capargs" -reps 1 -warm 1 >/dev/null
	for _ in $(seq "$REPS"); do
		read -r w c _ < <("$cache/grepbench" -root "$root" -args "$capargs" -reps 1 -warm 0)
		cw+=("$w"); cc+=("$c")
		read -r w c < <(ext_time rg -uu "${rgargs[@]}" "$path")
		rw+=("$w"); rc+=("$c")
		read -r w c < <(LC_ALL=C ext_time grep -rI "${grepargs[@]}" "$path")
		gw+=("$w"); gc+=("$c")
	done
	local m=()
	for arr in cw cc rw rc gw gc; do
		local -n a=$arr
		m+=("$(printf '%s\n' "${a[@]}" | median)")
	done
	awk -v where="$where" -v name="$name" -v cw="${m[0]}" -v cc="${m[1]}" -v rw="${m[2]}" -v rc="${m[3]}" -v gw="${m[4]}" -v gc="${m[5]}" '
		function ratio(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
		BEGIN {
		printf "| %s | %s | %.3f / %.3f | %.3f / %.3f | %.3f / %.3f | %s / %s | %s / %s |\n",
			where, name, cw, cc, rw, rc, gw, gc, ratio(cw, rw), ratio(cc, rc), ratio(cw, gw), ratio(cc, gc) }'
}

cases() {
	local where=$1 path=$2
	run_case "$where" "literal" '{"pattern":"ErrShortBuffer","literal":true}' "$path" -n -F ErrShortBuffer -- -n -F ErrShortBuffer
	run_case "$where" "case-insensitive literal" '{"pattern":"context","literal":true,"-i":true}' "$path" -n -F -i context -- -n -F -i context
	run_case "$where" "regex, literal prefix" '{"pattern":"func [A-Z][a-zA-Z]*Handler"}' "$path" -n 'func [A-Z][a-zA-Z]*Handler' -- -n -E 'func [A-Z][a-zA-Z]*Handler'
	run_case "$where" "regex, no literal" '{"pattern":"[A-Z][a-z]+[0-9]{3}[a-z]"}' "$path" -n '[A-Z][a-z]+[0-9]{3}[a-z]' -- -n -E '[A-Z][a-z]+[0-9]{3}[a-z]'
	run_case "$where" "files_with_matches" '{"pattern":"context","output_mode":"files_with_matches"}' "$path" -l context -- -l context
}

# check_case WHERE NAME CAPKIT_ARGS PATH RG_ARGS...: capkit's entries
# against rg's; prints a table row and returns 1 if they differ.
check_case() {
	local where=$1 name=$2 capargs=$3 path=$4 root=$4
	shift 4
	if [ -f "$path" ]; then
		root=$(dirname "$path")
		capargs="${capargs%\}},\"path\":\"$(basename "$path")\"}"
	fi
	local dir=$cache/grep-check/${where// /-}.${name// /-}
	mkdir -p "$dir"
	"$cache/grepbench" -root "$root" -args "$capargs" -reps 1 -warm 0 -list "$dir/capkit.raw" >/dev/null
	LC_ALL=C sort "$dir/capkit.raw" >"$dir/capkit"
	# rg names files as given; capkit relative to its root
	rg -uu -H "$@" "$path" | awk -v p="$root/" '
		index($0, p) == 1 { $0 = substr($0, length(p) + 1) }
		{ if (match($0, /:[0-9]+:/)) $0 = substr($0, 1, RSTART + RLENGTH - 2); print }' |
		LC_ALL=C sort >"$dir/rg"
	local nc nr same=yes
	nc=$(wc -l <"$dir/capkit")
	nr=$(wc -l <"$dir/rg")
	if ! cmp -s "$dir/capkit" "$dir/rg"; then
		same="**no**: $(LC_ALL=C comm -3 "$dir/capkit" "$dir/rg" | wc -l) entries differ ($dir)"
	fi
	echo "| $where | $name | $nc | $nr | $same |"
	[ "$same" = yes ]
}

checks() {
	local where=$1 path=$2 ok=0
	check_case "$where" "literal" '{"pattern":"ErrShortBuffer","literal":true}' "$path" -n -F ErrShortBuffer || ok=1
	check_case "$where" "case-insensitive literal" '{"pattern":"context","literal":true,"-i":true}' "$path" -n -F -i context || ok=1
	check_case "$where" "regex, literal prefix" '{"pattern":"func [A-Z][a-zA-Z]*Handler"}' "$path" -n 'func [A-Z][a-zA-Z]*Handler' || ok=1
	check_case "$where" "regex, no literal" '{"pattern":"[A-Z][a-z]+[0-9]{3}[a-z]"}' "$path" -n '[A-Z][a-z]+[0-9]{3}[a-z]' || ok=1
	check_case "$where" "files_with_matches" '{"pattern":"context","output_mode":"files_with_matches"}' "$path" -l context || ok=1
	return $ok
}

files=$(find "$TREE" -type f | wc -l)
bytes=$(du -sb "$TREE" | cut -f1)
bigpath="$(cd "$(dirname "$big")" && pwd)/$(basename "$big")"
machine_line
echo "tree: $TREE, $files files, $((bytes / 1048576)) MiB; big file: $big, 1 GiB; REPS=$REPS"
echo
if [ -z "${CHECK_ONLY:-}" ]; then
	echo "| input | search | capkit wall / CPU s | rg wall / CPU s | grep wall / CPU s | capkit÷rg wall / CPU | capkit÷grep wall / CPU |"
	echo "| --- | --- | --- | --- | --- | --- | --- |"
	cases tree "$TREE"
	cases "1 GiB file" "$bigpath"
	echo
fi
echo "| input | search | capkit entries | rg entries | identical |"
echo "| --- | --- | --- | --- | --- |"
status=0
checks tree "$TREE" || status=1
checks "1 GiB file" "$bigpath" || status=1
load_line
exit $status
