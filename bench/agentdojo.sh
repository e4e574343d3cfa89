#!/usr/bin/env bash
# The suites in AgentDojo's shape for script provenance (bench/agentdojo,
# issue 26): every user task benign and under every injection task, with
# provenance off and on, side by side in one run; prints the machine and
# the table (benign utility, utility under attack, attack success rate,
# per suite and in total). TestAgentDojo asserts the goals (attack success
# 0 with provenance on; benign utility on at least 80% of off).
#
# Usage: bash bench/agentdojo.sh            (from the repository root)
#        WORKER=1 bash bench/agentdojo.sh   (plans in a worker process, as capkit serve runs them)
#        DETAIL=1 bash bench/agentdojo.sh   (also each attack that succeeds, and each utility lost)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
table=$(mktemp)
log=$(mktemp)
trap 'rm -f "$table" "$log"' EXIT
start=$(date +%s.%N)
if ! CAPKIT_AGENTDOJO_TABLE="$table" CAPKIT_AGENTDOJO_WORKER="${WORKER:-}" CAPKIT_AGENTDOJO_DETAIL="${DETAIL:-}" \
	go test -count=1 -run '^TestAgentDojo$' -v ./bench/agentdojo >"$log" 2>&1; then
	cat "$log"
	exit 1
fi
end=$(date +%s.%N)
if [ -n "${DETAIL:-}" ]; then
	grep -E '^ +harness_test.go:[0-9]+: (off|on) ' "$log" | sed -E 's/^ +harness_test.go:[0-9]+: //'
fi
cat "$table"
printf 'go test (build included): %.1f s; plans %s\n' "$(echo "$end - $start" | bc)" "$([ -n "${WORKER:-}" ] && echo "in a worker process" || echo "in process")"
grep -E '^--- PASS' "$log"
load_line
