#!/usr/bin/env bash
# Two revisions side by side in one run: BEFORE (default 9069883, the last
# commit before internal/scope) against the work tree. Each part builds
# both first and then runs them alternately, so that a change of machine
# load falls on both.
#
#   bash bench/before-after.sh                        # both parts
#   PARTS=calls bash bench/before-after.sh            # one tool call's cost only
#   BEFORE=a9f1846 PARTS=bench bash bench/before-after.sh   # the layout change
#
# bench: the kernel, file-tool and MCP stdio Go benchmarks and a CLI call,
# ROUNDS times each (default 5); medians and the ratio after/before.
# Packages moved in the layout change are found at their path in each
# revision (fstools then, files/tools now; mcpserver then, serve/mcpserver
# now).
#
# calls: what one edit_file and one file_copy cost a `capkit serve` over
# stdio (bench/callcount): the capkit files and packages the call runs
# through and how often the confinement's steps ran (binaries built with
# -cover), the system calls per call (strace -f -c, CALLS calls, default
# 200) and the server's CPU per call (median of ROUNDS rounds of CALLS
# calls). Every figure is the difference between a server that made the
# calls and one that did not.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
before=${BEFORE:-9069883}
rounds=${ROUNDS:-5}
calls=${CALLS:-200}
parts=${PARTS:-bench calls}
echo "before: $(git log -1 --format='%h %s' "$before" | cut -c1-100)"
echo "after: the work tree at $(git log -1 --format=%h HEAD)$(git diff --quiet HEAD || echo ' (modified)')"
work=$(mktemp -d)
trap 'git worktree remove --force "$work/old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git worktree add -q --detach "$work/old" "$before"

pkgdir() { # rev-tree new-path old-path
	if [ -d "$1/$2" ]; then echo "$2"; else echo "$3"; fi
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }

bench_build() { # tree name
	local tree=$1 name=$2
	(cd "$tree" && GOFLAGS=-mod=mod go test -c -o "$work/$name.kernel" ./kernel)
	(cd "$tree" && GOFLAGS=-mod=mod go test -c -o "$work/$name.tools" "./$(pkgdir "$tree" files/tools fstools)")
	(cd "$tree" && GOFLAGS=-mod=mod go test -c -o "$work/$name.mcp" "./$(pkgdir "$tree" serve/mcpserver mcpserver)")
	(cd "$tree" && GOFLAGS=-mod=mod go build -o "$work/$name.capkit" ./cmd/capkit)
}

bench_run() { # binary dir pattern -> ns/op
	(cd "$2" && "$1" -test.run '^$' -test.bench "$3" -test.benchtime 1s 2>/dev/null) | awk '/^Benchmark/ {for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") print $i}' | head -1
}

# cli: one `capkit call read_file` of a small file, process start to exit,
# in ms per call over 20 calls.
cli() { # binary fixture
	local start end
	start=$(date +%s%N)
	for _ in $(seq 20); do "$1" call read_file '{"path": "a.txt"}' --root "$2" >/dev/null; done
	end=$(date +%s%N)
	echo "($end - $start) / 20000000" | bc -l
}

bench_part() {
	bench_build "$work/old" old
	bench_build . new
	declare -A dirs=([kernel]=kernel [tools]="$(pkgdir . files/tools fstools)" [mcp]="$(pkgdir . serve/mcpserver mcpserver)")
	declare -A olddirs=([kernel]=kernel [tools]="$(pkgdir "$work/old" files/tools fstools)" [mcp]="$(pkgdir "$work/old" serve/mcpserver mcpserver)")
	local benches=("kernel:^BenchmarkKernelCall$" "tools:^BenchmarkReadFile4MiB$" "tools:^BenchmarkEditFile1MiB$" "tools:^BenchmarkListDir1000$" "tools:^BenchmarkGrep2000Files$" "mcp:^BenchmarkStdioSmallCall$" "mcp:^BenchmarkStdio4MiBResult$")
	printf '| benchmark | before (ns/op) | after (ns/op) | after/before |\n|---|---|---|---|\n'
	local b pkg pat o n mo mn
	for b in "${benches[@]}"; do
		pkg=${b%%:*} pat=${b#*:}
		o=() n=()
		for _ in $(seq "$rounds"); do
			o+=("$(bench_run "$work/old.$pkg" "$work/old/${olddirs[$pkg]}" "$pat")")
			n+=("$(bench_run "$work/new.$pkg" "${dirs[$pkg]}" "$pat")")
		done
		mo=$(printf '%s\n' "${o[@]}" | median) mn=$(printf '%s\n' "${n[@]}" | median)
		printf '| %s | %s | %s | %.2f |\n' "${pat//[\^\$]/}" "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
	done
	local fixture
	fixture=$(mktemp -d -p "$work")
	printf 'hello\n' >"$fixture/a.txt"
	o=() n=()
	for _ in $(seq "$rounds"); do o+=("$(cli "$work/old.capkit" "$fixture")"); n+=("$(cli "$work/new.capkit" "$fixture")"); done
	mo=$(printf '%s\n' "${o[@]}" | median) mn=$(printf '%s\n' "${n[@]}" | median)
	printf '| capkit call read_file (CLI, ms/call) | %.2f | %.2f | %.2f |\n' "$mo" "$mn" "$(echo "$mn / $mo" | bc -l)"
}

# steps are the functions whose calls the calls part counts, each present
# in both revisions (A|B: A where the tree has it, else B): a root
# acquired (a cached os.Root handed out), a directory opened inside a
# root (a parent, or a directory on the way), a protected-path check by
# name (the protected set walked) and on disk (a directory's host path
# read back), the content hashed whole or streamed.
steps=(
	internal/atfile.AcquireRoot
	internal/atfile.OpenDirIn
	"capability.Protected.Every|capability.Protected.all"
	internal/atfile.Dir.HostPath
	files.VersionOf
	files.VersionHash.Write
)

calls_build() { # tree name
	local tree=$1 name=$2
	(cd "$tree" && GOFLAGS=-mod=mod go build -o "$work/$name.capkit" ./cmd/capkit)
	(cd "$tree" && GOFLAGS=-mod=mod go build -cover -covermode=atomic -coverpkg=github.com/capkit/capkit/... -o "$work/$name.cover" ./cmd/capkit)
}

calls_part() {
	calls_build "$work/old" old
	calls_build . new
	GOFLAGS=-mod=mod go build -o "$work/callcount" ./bench/callcount
	local tool counts=()
	for s in "${steps[@]}"; do counts+=(-count "$s"); done
	for tool in edit_file file_copy; do
		echo
		"$work/callcount" -mode cover -tool "$tool" -calls 1 -bin "before=$work/old.cover" -bin "after=$work/new.cover" \
			-src "before=$work/old" -src "after=." "${counts[@]}" 2>"$work/files-$tool"
		sed 's/^/files: /' "$work/files-$tool"
		echo
		"$work/callcount" -mode strace -tool "$tool" -calls "$calls" -bin "before=$work/old.capkit" -bin "after=$work/new.capkit"
		echo
		"$work/callcount" -mode cpu -tool "$tool" -calls "$calls" -rounds "$rounds" -bin "before=$work/old.capkit" -bin "after=$work/new.capkit" 2>/dev/null
	done
}

for part in $parts; do
	echo
	"${part}_part"
done
echo
load_line
