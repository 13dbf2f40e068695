#!/usr/bin/env bash
# Stops, starts or restarts a server made by scripts/postgres-up.sh (fault tests: a real server going away).
# Usage: scripts/postgres-ctl.sh DIR {stop|start|restart}
set -euo pipefail
datadir="$1"
action="$2"
bindir="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")"
run_as=()
[[ "$(id -u)" == 0 ]] && run_as=(runuser -u postgres --)
case "$action" in
    stop) "${run_as[@]}" "$bindir/pg_ctl" -D "$datadir/data" -m fast -w stop >/dev/null ;;
    # postgres-up.sh wrote socket, port and the rest into postgresql.conf: a plain start serves the same DSN.
    start|restart) "${run_as[@]}" "$bindir/pg_ctl" -D "$datadir/data" -l "$datadir/server.log" -m fast -w -t 60 \
        "$action" >/dev/null ;;
    *) echo "usage: $0 DIR {stop|start|restart}" >&2; exit 2 ;;
esac
