#!/usr/bin/env bash
# The kernel, file-tool and MCP stdio benchmarks, and a CLI call, of two
# revisions side by side in one run: test binaries of both are built first,
# then run alternately (ROUNDS times each) so that a change of machine load
# falls on both. Prints medians and the ratio after/before.
#
#   bash bench/before-after.sh                 # a9f1846 (before the layout) vs the work tree
#   BEFORE=REV ROUNDS=7 bash bench/before-after.sh
#
# Packages moved in the layout change are found at their path in each
# revision (fstools then, files/tools now; mcpserver then, serve/mcpserver now).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
before=${BEFORE:-a9f1846}
rounds=${ROUNDS:-5}
work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/old" "$before"

pkgdir() { # rev-tree new-path old-path
	if [ -d "$1/$2" ]; then echo "$2"; else echo "$3"; fi
}
build() { # tree name
	local tree=$1 name=$2
	(cd "$tree" && GOFLAGS=-mod=mod go test -c -o "$work/$name.kernel" ./kernel)
	(cd "$tree" && GOFLAGS=-mod=mod go test -c -o "$work/$name.tools" "./$(pkgdir "$tree" files/tools fstools)")
	(cd "$tree" && GOFLAGS=-mod=mod go test -c -o "$work/$name.mcp" "./$(pkgdir "$tree" serve/mcpserver mcpserver)")
	(cd "$tree" && GOFLAGS=-mod=mod go build -o "$work/$name.capkit" ./cmd/capkit)
}
build "$work/old" old
build . new

declare -A dirs=([kernel]=kernel [tools]="$(pkgdir . files/tools fstools)" [mcp]="$(pkgdir . serve/mcpserver mcpserver)")
declare -A olddirs=([kernel]=kernel [tools]="$(pkgdir "$work/old" files/tools fstools)" [mcp]="$(pkgdir "$work/old" serve/mcpserver mcpserver)")
benches=("kernel:^BenchmarkKernelCall$" "tools:^BenchmarkReadFile4MiB$" "tools:^BenchmarkEditFile1MiB$" "tools:^BenchmarkListDir1000$" "tools:^BenchmarkGrep2000Files$" "mcp:^BenchmarkStdioSmallCall$" "mcp:^BenchmarkStdio4MiBResult$")

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
run() { # binary dir pattern -> ns/op
	(cd "$2" && "$1" -test.run '^$' -test.bench "$3" -test.benchtime 1s 2>/dev/null) | awk '/^Benchmark/ {for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") print $i}' | head -1
}

printf '| benchmark | before (ns/op) | after (ns/op) | after/before |\n|---|---|---|---|\n'
for b in "${benches[@]}"; do
	pkg=${b%%:*} pat=${b#*:}
	o=() n=()
	for _ in $(seq "$rounds"); do
		o+=("$(run "$work/old.$pkg" "$work/old/${olddirs[$pkg]}" "$pat")")
		n+=("$(run "$work/new.$pkg" "${dirs[$pkg]}" "$pat")")
	done
	mo=$(printf '%s\n' "${o[@]}" | median) mn=$(printf '%s\n' "${n[@]}" | median)
	printf '| %s | %s | %s | %.2f |\n' "${pat//[\^\$]/}" "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
done

# The CLI: one `capkit call read_file` of a small file, process start to exit.
fixture=$(mktemp -d -p "$work")
printf 'hello\n' >"$fixture/a.txt"
cli() { # binary -> ms per call over 20 calls
	local start end
	start=$(date +%s%N)
	for _ in $(seq 20); do "$1" call read_file '{"path": "a.txt"}' --root "$fixture" >/dev/null; done
	end=$(date +%s%N)
	echo "($end - $start) / 20000000" | bc -l
}
o=() n=()
for _ in $(seq "$rounds"); do o+=("$(cli "$work/old.capkit")"); n+=("$(cli "$work/new.capkit")"); done
mo=$(printf '%s\n' "${o[@]}" | median) mn=$(printf '%s\n' "${n[@]}" | median)
printf '| capkit call read_file (CLI, ms/call) | %.2f | %.2f | %.2f |\n' "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
