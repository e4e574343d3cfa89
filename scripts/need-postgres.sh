#!/usr/bin/env bash
# PostgreSQL server binaries for the net/budget and net/quota tests (they
# start their own server with initdb and pg_ctl in a temporary directory,
# on a Unix socket, as an unprivileged user). Idempotent.
set -euo pipefail
if command -v initdb >/dev/null 2>&1 || compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
	exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "need-postgres: initdb is missing; install Debian's postgresql package (as root: apt-get install -y postgresql)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq postgresql >/dev/null
# The packaged cluster is not used: the tests run their own servers.
if command -v pg_lsclusters >/dev/null 2>&1; then
	pg_lsclusters -h 2>/dev/null | while read -r ver name _; do
		pg_ctlcluster "$ver" "$name" stop 2>/dev/null || true
	done
fi
