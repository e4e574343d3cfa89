#!/usr/bin/env bash
# Start-up of the capkit binary and its CLI, two revisions side by side in
# one run (and an empty Go program and bubblewrap as floors):
#   version     `capkit version`
#   tools       `capkit tools --root D`                 (builds the host)
#   call        `capkit call read_file '{"path":"a.txt"}' --root D`
#   run         `capkit run --root D -- true`           (capkit re-executes
#               itself as the sandbox helper, so its start counts twice)
#   bwrap       `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true`
#   serve       `capkit serve --root D` over stdio: from the process start to
#               the answer of `initialize` read by the client
#   empty       an empty Go program (`func main() {}`)
# Each round runs every command of both revisions back to back, so a change
# of machine load falls on both. Wall time is measured without perf; page
# faults and task-clock (CPU ms, children included) come from a second run
# under `perf stat` (left out when perf is missing or not permitted).
# Prints the medians over ROUNDS rounds and the ratio after/before, then
# the package initializers of `capkit version` (GODEBUG=inittrace=1): the
# sum and the largest, medians over the same rounds.
#
#   bash bench/startup.sh                  # BEFORE (45bdfd0) vs the work tree
#   BEFORE=REV ROUNDS=101 bash bench/startup.sh
#   BEFORE= bash bench/startup.sh          # the work tree alone
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
before=${BEFORE-45bdfd0}
rounds=${ROUNDS:-51}
work=$(mktemp -d)
trap 'if [ -n "$before" ]; then git worktree remove --force "$work/old" >/dev/null 2>&1 || true; fi; rm -rf "$work"' EXIT

go build -o "$work/new" ./cmd/capkit
revs=(new)
if [ -n "$before" ]; then
	git worktree add -q --detach "$work/old" "$before"
	(cd "$work/old" && go build -o "$work/old.bin" ./cmd/capkit)
	mv "$work/old.bin" "$work/old".capkit
	mv "$work/new" "$work/new".capkit
	revs=(old new)
else
	mv "$work/new" "$work/new".capkit
fi
mkdir "$work/empty.src" "$work/D"
printf 'package main\n\nfunc main() {}\n' >"$work/empty.src/main.go"
(cd "$work/empty.src" && go mod init empty >/dev/null 2>&1 && go build -o "$work/empty.bin" .)
printf 'hello\n' >"$work/D/a.txt"
perf=1
perf stat -x, -e page-faults -- true >/dev/null 2>&1 || perf=
bwrap=1
command -v bwrap >/dev/null || bwrap=

init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"startup-bench","version":"0"}}}'

# cmdline NAME BIN: the command measured as NAME with capkit binary BIN.
cmdline() {
	case $1 in
	version) echo "$2 version" ;;
	tools) echo "$2 tools --root $work/D" ;;
	call) echo "$2 call read_file {\"path\":\"a.txt\"} --root $work/D" ;;
	run) echo "$2 run --root $work/D -- true" ;;
	bwrap) echo "bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true" ;;
	empty) echo "$work/empty.bin" ;;
	esac
}

# wall NAME BIN [PERF...]: run once (under PERF when given); print the wall µs.
wall() {
	local name=$1 bin=$2 s e line
	shift 2
	if [ "$name" = serve ]; then
		s=$EPOCHREALTIME
		{ printf '%s\n' "$init" | "$@" "$bin" serve --root "$work/D" 2>/dev/null || true; } | {
			IFS= read -r line
			e=$EPOCHREALTIME
			case $line in *'"id":1,"result"'*) ;; *) echo "serve: no initialize answer: $line" >&2; exit 1 ;; esac
			cat >/dev/null
			echo $(((${e/./} - ${s/./})))
		}
		return
	fi
	# shellcheck disable=SC2046 # the command line is split on purpose
	set -- "$@" $(cmdline "$name" "$bin")
	s=$EPOCHREALTIME
	"$@" >/dev/null 2>&1 || { echo "$name failed: $*" >&2; exit 1; }
	e=$EPOCHREALTIME
	echo $(((${e/./} - ${s/./})))
}

# counters NAME BIN: page faults and task-clock µs of one run under perf.
counters() {
	local out=$work/perf.csv
	wall "$1" "$2" perf stat -x, -o "$out" -e page-faults,task-clock -- >/dev/null
	awk -F, '$3 == "page-faults" {pf = $1} $3 == "task-clock" {tc = $1 * 1000} END {printf "%d %d\n", pf, tc}' "$out"
}

names=(empty version tools call serve run)
[ -n "$bwrap" ] && names+=(bwrap)
declare -A W F T
for _ in $(seq "$rounds"); do
	for n in "${names[@]}"; do
		for r in "${revs[@]}"; do
			key=$n.$r
			case $n in empty | bwrap) [ "$r" = "${revs[0]}" ] || continue; key=$n ;; esac
			W[$key]+="$(wall "$n" "$work/$r.capkit") "
			if [ -n "$perf" ]; then
				read -r pf tc < <(counters "$n" "$work/$r.capkit")
				F[$key]+="$pf " T[$key]+="$tc "
			fi
		done
	done
done

median() { tr ' ' '\n' | grep . | sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
ms() { awk -v u="$1" 'BEGIN {printf "%.2f", u / 1000}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f", b / a}'; }

echo "capkit start-up, median of $rounds rounds; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -n "$before" ]; then
	printf '| command | wall ms before | wall ms after | after/before | page faults before | after | task-clock ms before | after |\n|---|---|---|---|---|---|---|---|\n'
else
	printf '| command | wall ms | page faults | task-clock ms |\n|---|---|---|---|\n'
fi
for n in "${names[@]}"; do
	case $n in
	empty | bwrap)
		w=$(median <<<"${W[$n]}")
		pf=$(median <<<"${F[$n]:-0}") tc=$(median <<<"${T[$n]:-0}")
		if [ -n "$before" ]; then
			printf '| %s | %s | | | %s | | %s | |\n' "$n" "$(ms "$w")" "$pf" "$(ms "$tc")"
		else
			printf '| %s | %s | %s | %s |\n' "$n" "$(ms "$w")" "$pf" "$(ms "$tc")"
		fi
		;;
	*)
		wn=$(median <<<"${W[$n.new]}") pfn=$(median <<<"${F[$n.new]:-0}") tcn=$(median <<<"${T[$n.new]:-0}")
		if [ -n "$before" ]; then
			wo=$(median <<<"${W[$n.old]}") pfo=$(median <<<"${F[$n.old]:-0}") tco=$(median <<<"${T[$n.old]:-0}")
			printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$(ms "$wo")" "$(ms "$wn")" "$(ratio "$wo" "$wn")" "$pfo" "$pfn" "$(ms "$tco")" "$(ms "$tcn")"
		else
			printf '| %s | %s | %s | %s |\n' "$n" "$(ms "$wn")" "$pfn" "$(ms "$tcn")"
		fi
		;;
	esac
done
if [ -n "$bwrap" ]; then
	b=$(median <<<"${W[bwrap]}") r=$(median <<<"${W[run.new]}")
	echo "capkit run -- true / bwrap true (wall, medians): $(ratio "$b" "$r") (goal: at most 1.5)"
fi

# inits BIN: one `BIN version` under inittrace, as "package ms bytes" lines.
inits() {
	GODEBUG=inittrace=1 "$1" version 2>&1 >/dev/null | awk '/^init / {print $2, $5, $8}'
}
# sums FILE: one start's total init ms and KiB, and capkit's own packages'.
sums() {
	awk '{ms += $2; b += $3} /^github.com\/capkit\/capkit\// {ours += $2; ob += $3} END {printf "%.3f %d %.3f %d\n", ms, b / 1024, ours, ob / 1024}' "$1"
}
for r in "${revs[@]}"; do
	: >"$work/inits.$r"
	tot=() kib=() own=() ownkib=()
	for _ in $(seq "$rounds"); do
		inits "$work/$r.capkit" >"$work/one"
		cat "$work/one" >>"$work/inits.$r"
		read -r a b c d < <(sums "$work/one")
		tot+=("$a") kib+=("$b") own+=("$c") ownkib+=("$d")
	done
	echo "$r: package init $(median <<<"${tot[*]}") ms and $(median <<<"${kib[*]}") KiB allocated per start; capkit's own packages $(median <<<"${own[*]}") ms and $(median <<<"${ownkib[*]}") KiB (medians of $rounds)"
done
r=${revs[${#revs[@]} - 1]}
echo "largest initializers ($r, median ms of $rounds starts):"
sort -k1,1 -k2,2n "$work/inits.$r" | awk '{ms[$1] = ms[$1] " " $2; b[$1] = $3} END {for (p in ms) {n = split(substr(ms[p], 2), a, " "); printf "%s %.3f %d\n", p, a[int((n + 1) / 2)], b[p] / 1024}}' | sort -k2,2nr | head -12 | awk '{printf "  %-50s %6.3f ms %5d KiB\n", $1, $2, $3}'
