#!/usr/bin/env bash
# iproute2's ip, for the end-to-end tests that serve beyond loopback inside
# a network namespace of their own (e2e/httpnet_test.go: ip netns, veth).
# Idempotent. Without root nothing is installed: those tests then skip
# (and fail under CI=true, where they must run).
set -euo pipefail
if command -v ip >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "need-iproute2: ip is missing; install Debian's iproute2 package (as root: apt-get install -y iproute2)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq iproute2 >/dev/null
