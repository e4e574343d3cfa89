#!/usr/bin/env bash
# Debian's chromium, the browser the dashboard tests (e2e/dashpage_test.go)
# drive headless through the DevTools protocol, and fonts for its pages and
# screenshots to render with. Idempotent. Without root nothing is
# installed: those tests then skip (and fail under CI=true, where they
# must run).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && fc-list 2>/dev/null | grep -qi dejavu; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "need-chromium: chromium is missing; install Debian's chromium and fonts-dejavu-core packages (as root: apt-get install -y chromium fonts-dejavu-core)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core fontconfig >/dev/null
