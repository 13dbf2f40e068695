#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the tests and prints its data directory on stdout.
# Installs Debian's postgresql package when no server binaries are present (CI runs as root on a fresh machine).
# The server listens only on a unix socket inside its own temp dir, so no port can clash with anything.
# Stop it with scripts/postgres-down.sh DIR.
set -euo pipefail

find_bindir() {
    local dir
    for dir in /usr/lib/postgresql/*/bin; do
        if [[ -x "$dir/initdb" && -x "$dir/pg_ctl" ]]; then
            echo "$dir"
        fi
    done | sort -V | tail -n 1
}

bindir="$(find_bindir)"
if [[ -z "$bindir" ]]; then
    if [[ "$(id -u)" != 0 ]]; then
        echo "postgres-up: no PostgreSQL server binaries and not root; install Debian's postgresql package" >&2
        exit 1
    fi
    echo "postgres-up: installing postgresql with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends postgresql >&2
    bindir="$(find_bindir)"
    [[ -n "$bindir" ]] || { echo "postgres-up: postgresql installed but no initdb found" >&2; exit 1; }
fi

datadir="$(mktemp -d /tmp/chainwarden-pg.XXXXXX)"
# The server refuses to run as root: as root it runs as the postgres user the Debian package creates.
run_as=()
if [[ "$(id -u)" == 0 ]]; then
    id postgres >/dev/null 2>&1 || { echo "postgres-up: running as root but no postgres user" >&2; exit 1; }
    chown postgres "$datadir"
    run_as=(runuser -u postgres --)
fi
"${run_as[@]}" "$bindir/initdb" -D "$datadir/data" -U postgres -A trust --no-sync -E UTF8 >"$datadir/initdb.log" 2>&1 \
    || { cat "$datadir/initdb.log" >&2; exit 1; }
# fsync off: the data dir is deleted afterwards; durability is SQLite's and the real server's business.
# CHAINWARDEN_PG_FSYNC=on keeps it on, as a production server runs: the billing benchmarks compare per-fact
# commits (one WAL flush each) with batches there, as SQLite's are measured with synchronous=FULL.
fsync="${CHAINWARDEN_PG_FSYNC:-off}"
[[ "$fsync" == on || "$fsync" == off ]] || { echo "postgres-up: CHAINWARDEN_PG_FSYNC must be on or off" >&2; exit 1; }
# The settings also go into postgresql.conf, so scripts/postgres-ctl.sh can stop and start the same server.
cat >>"$datadir/data/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '$datadir'
port = 5432
fsync = $fsync
max_connections = 100
CONF
"${run_as[@]}" "$bindir/pg_ctl" -D "$datadir/data" -l "$datadir/server.log" -w -t 60 \
    -o "-c listen_addresses='' -k $datadir -p 5432 -c fsync=$fsync -c max_connections=100" start >&2 \
    || { cat "$datadir/server.log" >&2; exit 1; }
echo "$datadir"
