#!/usr/bin/env bash
# curl, the client the network-policy tests run inside the container
# (cmd/capkit/internal/cli, e2e: a command reaching a host through capkit's proxy).
# Idempotent. Without root nothing is installed: those tests then use
# their Go client alone or skip (and fail under CI=true, where they must
# run).
set -euo pipefail
if command -v curl >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "need-curl: curl is missing; install Debian's curl package (as root: apt-get install -y curl)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq curl >/dev/null
