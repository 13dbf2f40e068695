#!/usr/bin/env bash
# Stops a server started by scripts/postgres-up.sh and deletes its data directory.
set -euo pipefail
datadir="$1"
[[ -d "$datadir/data" ]] || exit 0
bindir="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")"
run_as=()
[[ "$(id -u)" == 0 ]] && run_as=(runuser -u postgres --)
"${run_as[@]}" "$bindir/pg_ctl" -D "$datadir/data" -m fast -w stop >/dev/null || true
rm -rf "$datadir"
