#!/usr/bin/env bash
# Contained commands beside their peers, in one run:
#   1. starting a contained `true`: `capkit run --root DIR -- true` (full
#      containment: namespaces, private root, Landlock, seccomp) vs
#      `bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true`
#      (Debian bubblewrap; installed here if missing). Both are whole
#      process starts; capkit's includes its own start and the helper's.
#      Goal: within 1.5x.
#   2. `go test -count=1 ./fault/` of this repository through `capkit test`
#      (the repository as the writable root, capkit's own tool cache, the
#      module cache read-only) vs the same command bare. Goal: within 1.1x.
#   2b. the second `go test ./...` of a one-file module through
#      `capkit run --root MOD` (its tool cache kept from the first run, in
#      a cache directory of the bench's own) vs the second bare run.
#      Goal: within 1.5x.
#   3. in process, as `capkit serve` runs it (Go benchmarks of run/sandbox,
#      with capkit's own binary as the helper): sandbox.Run(true) cold
#      (full and reduced containment) and with a warm helper (started
#      ahead, waiting for its call; between calls the benchmark waits,
#      untimed, for the next one to be ready; and back to back, not
#      waiting), vs exec of bwrap from the same process; wall clock and
#      CPU (the process and its children) per call; and the floor of the
#      cold path: /bin/true started from Go in the same namespaces.
#   3b. what an agent pays per call (bench/runcall): run_shell
#      {"command": "true"} over MCP on a live `capkit serve` (stdio, one
#      call at a time, RUNCALL_PAUSE between calls so that the next
#      container is built ahead, as an agent's turns space its calls) vs
#      a fresh bwrap true started by the same client, alternating; and the
#      same calls back to back (each waits for the container the last one
#      started). Goal: within 1.5x.
#   4. rows 1 and 3 (cold) again with capkit built with CGO_ENABLED=0: a
#      static binary, whose start (the helper's too) skips the dynamic
#      loader and the C runtime (capkit links cgo only through net and
#      os/user, which then use their pure-Go code).
# Each pair runs back to back, ROUNDS times (the machine is shared and its
# load drifts, so a pair's two runs see similar load); a round's ratio is
# capkit's time / the peer's, and the table shows the median times and the
# median of the rounds' ratios. The load average is printed before and
# after.
#
# Usage: bash bench/run.sh        (from anywhere; as a user who may create
#                                  user namespaces)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
ROUNDS=${ROUNDS:-31}
RUNCALL_ROUNDS=${RUNCALL_ROUNDS:-201}
RUNCALL_PAUSE=${RUNCALL_PAUSE:-50ms}
TEST_ROUNDS=${TEST_ROUNDS:-11}
if ! command -v bwrap >/dev/null; then
	apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
go build -o "$out/capkit" ./cmd/capkit
CGO_ENABLED=0 go build -o "$out/capkit-static" ./cmd/capkit
go build -o "$out/runcall" ./bench/runcall
mkdir "$out/root"
modcache=$(go env GOMODCACHE)
goroot=$(go env GOROOT)
cat >"$out/capkit.toml" <<TOML
[[root]]
path = "$PWD"
[run]
env = { PATH = "$goroot/bin:/usr/bin:/bin", GOMODCACHE = "$modcache", GOPROXY = "off", GOTOOLCHAIN = "local", GOFLAGS = "-buildvcs=false" }
read_only = ["$modcache", "$goroot"]
cache = "$out/run-cache"
[test]
command = ["go", "test", "-count=1", "./fault/"]
TOML
# A one-file module; capkit run's tool caches go to the bench's own
# directory (XDG_CACHE_HOME, for capkit only: the bare run keeps the
# host's Go cache).
mkdir "$out/mod"
printf 'module example.com/sum\n\ngo 1.22\n' >"$out/mod/go.mod"
printf 'package sum\n\n// Sum adds a and b.\nfunc Sum(a, b int) int { return a + b }\n' >"$out/mod/sum.go"
printf 'package sum\n\nimport "testing"\n\nfunc TestSum(t *testing.T) {\n\tif Sum(2, 3) != 5 {\n\t\tt.Fatal(Sum(2, 3))\n\t}\n}\n' >"$out/mod/sum_test.go"
modrun="cd '$out/mod' && XDG_CACHE_HOME='$out/xdg' '$out/capkit' run --root . -- go test ./..."
modbare="cd '$out/mod' && go test ./..."
mkdir "$out/serve-root"
cat >"$out/serve.toml" <<TOML
[[root]]
path = "$out/serve-root"
[actor.assistant]
effects = ["read_file", "run_shell"]
[run]
cache = "$out/run-cache"
TOML

# us CMD...: run CMD, fail the bench if it fails, print its wall time in µs.
us() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null
	e=$(date +%s%N)
	echo $(((e - s) / 1000))
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# pair NAME ROUNDS "CAPKIT CMD" "PEER CMD": one table row.
pair() {
	local name=$1 rounds=$2 a b
	: >"$out/a" && : >"$out/b" && : >"$out/r"
	for _ in $(seq "$rounds"); do
		a=$(us bash -c "$3")
		b=$(us bash -c "$4")
		echo "$a" >>"$out/a"
		echo "$b" >>"$out/b"
		awk -v a="$a" -v b="$b" 'BEGIN {printf "%.3f\n", a / b}' >>"$out/r"
	done
	printf '| %s | %.1f ms | %.1f ms | %.2f |\n' "$name" \
		"$(median <"$out/a" | awk '{print $1/1000}')" "$(median <"$out/b" | awk '{print $1/1000}')" "$(median <"$out/r")"
}
# Warm both (page cache, build cache).
"$out/capkit" run --root "$out/root" -- true
"$out/capkit-static" run --root "$out/root" -- true
"$out/capkit" test --config "$out/capkit.toml" >/dev/null
go test -count=1 ./fault/ >/dev/null
bash -c "$modrun" >/dev/null
bash -c "$modbare" >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| what | capkit | peer | ratio (median of rounds) |"
echo "|---|---|---|---|"
pair "contained \`true\` vs bwrap" "$ROUNDS" \
	"'$out/capkit' run --root '$out/root' -- true" \
	"bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true"
pair "contained \`true\` vs bwrap, capkit built with CGO_ENABLED=0" "$ROUNDS" \
	"'$out/capkit-static' run --root '$out/root' -- true" \
	"bwrap --unshare-all --ro-bind / / --dev /dev --proc /proc true"
pair "\`go test -count=1 ./fault/\`: capkit test vs bare" "$TEST_ROUNDS" \
	"'$out/capkit' test --config '$out/capkit.toml'" \
	"go test -count=1 ./fault/"
pair "second \`go test ./...\` of a one-file module: capkit run vs bare" "$TEST_ROUNDS" "$modrun" "$modbare"
# In-process: sandbox.Run from a running Go program (as `capkit serve`
# does), against bwrap started from the same program.
echo
# Five rounds, each running every benchmark once, so that load drift
# reaches all of them alike.
go test -c -o "$out/sandbox.test" ./run/sandbox/
: >"$out/bench.txt"
for _ in 1 2 3 4 5; do
	(cd "$out" && SANDBOX_BENCH_HELPER="$out/capkit __sandbox" SANDBOX_BENCH_STATIC_HELPER="$out/capkit-static __sandbox" ./sandbox.test -test.run '^$' -test.bench 'RunTrue|BwrapTrue|NamespacesTrue' -test.benchtime "${ROUNDS}x" >>"$out/bench.txt")
done
# val NAME COLUMN: the median of a benchmark's runs (3: ns/op, 5: cpu-ms/op).
val() { awk -v k="$1" -v c="$2" '/^Benchmark/ {n = $1; sub(/-[0-9]+$/, "", n); if (n == k) print $c}' "$out/bench.txt" | median; }
bwrap=$(val BenchmarkBwrapTrue 3)
bwrapcpu=$(val BenchmarkBwrapTrue 5)
echo "| sandbox.Run(true) in process vs exec of bwrap from the same process | capkit wall | bwrap wall | ratio | capkit CPU | bwrap CPU | ratio |"
echo "|---|---|---|---|---|---|---|"
for mode in full full-small-helper full-static-helper reduced warm warm-back-to-back; do
	awk -v m="$mode" -v f="$(val "BenchmarkRunTrue/$mode" 3)" -v c="$(val "BenchmarkRunTrue/$mode" 5)" -v b="$bwrap" -v bc="$bwrapcpu" 'BEGIN {
		printf "| %s | %.1f ms | %.1f ms | %.2f | %.1f ms | %.1f ms | %.2f |\n", m, f / 1e6, b / 1e6, f / b, c, bc, c / bc
	}'
done
awk -v f="$(val BenchmarkNamespacesTrue 3)" -v c="$(val BenchmarkNamespacesTrue 5)" -v b="$bwrap" -v bc="$bwrapcpu" 'BEGIN {
	printf "| floor: /bin/true started from Go in the same namespaces, no helper | %.1f ms | %.1f ms | %.2f | %.1f ms | %.1f ms | %.2f |\n", f / 1e6, b / 1e6, f / b, c, bc, c / bc
}'
echo
echo "| per call, as an agent pays it | capkit | bwrap | ratio (median of rounds) | CPU | rounds |"
echo "|---|---|---|---|---|---|"
"$out/runcall" -capkit "$out/capkit" -config "$out/serve.toml" -rounds "$RUNCALL_ROUNDS" -pause "$RUNCALL_PAUSE" -back-to-back | grep '^|'
echo
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
