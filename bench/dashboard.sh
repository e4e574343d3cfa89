#!/usr/bin/env bash
# The audit page over a large trail, in headless Chromium: writes a
# hash-chained trail of EVENTS call events (1,000,000 by default; about
# 420 MB), checks it with `capkit audit verify`, serves it with `capkit
# dashboard --audit`, and reports the time from navigation to the page's
# first rows (the performance mark capkit-first-rows) and to its first
# contentful paint, on the first load and after a reload
# (e2e/dashperf_test.go: TestDashboardFirstPaint).
# Needs chromium (scripts/need-chromium.sh).
#
# Usage: bash bench/dashboard.sh          (from the repository root)
#        EVENTS=100000 bash bench/dashboard.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/machine.sh
machine_line
CAPKIT_DASH_EVENTS=${EVENTS:-1000000} go test -count=1 -timeout 30m -run '^TestDashboardFirstPaint$' -v ./e2e/ |
	grep -E 'dashperf_test|^(--- |ok|FAIL|PASS)'
load_line
