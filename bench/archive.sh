#!/usr/bin/env bash
# The text archive (archive/textarchive) beside what it is built on, in
# one run (issue 22): add-text of DOCS documents beside a bare FTS5 table
# (a transaction per document each), search beside a bare MATCH … ORDER
# BY bm25(), backup beside tar and a full audit beside sha256sum of GIB
# GiB of files, each backup and audit ROUNDS times (default 1) with the
# CPU seconds of each side. Run from the repository root:
#   DOCS=10000 GIB=2 ROUNDS=3 bash bench/archive.sh
# WORK (default bench/.cache/archive) is emptied first and must have room
# for about 3 × GIB. Figures: bench/RESULTS.md.
set -euo pipefail
. bench/machine.sh
machine_line
work=${WORK:-$PWD/bench/.cache/archive}
rm -rf "$work" && mkdir -p "$work"
go build -o "$work/../archivebench" ./bench/archivebench
"$work/../archivebench" -dir "$work" -docs "${DOCS:-10000}" -gib "${GIB:-2}" -reps "${REPS:-20}" -rounds "${ROUNDS:-1}"
load_line
rm -rf "$work"
