#!/usr/bin/env bash
# Starts a throwaway redis-server for the tests (the docs' shared-budget example) and prints its directory on stdout.
# Debian's redis-server, installed by scripts/redis-path.sh when missing. It listens only on a unix socket inside
# its own temp dir (DIR/redis.sock, no TCP port), persists every write to an append-only file in DIR (as a shared
# budget needs, docs/containment.md "Shared budgets"), and is stopped by scripts/redis-down.sh DIR.
set -euo pipefail
bin="$(scripts/redis-path.sh)"
dir="$(mktemp -d /tmp/chainwarden-redis.XXXXXX)"
"$bin" --port 0 --unixsocket "$dir/redis.sock" --unixsocketperm 700 --dir "$dir" --save '' --appendonly yes --appendfsync always \
    --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" >&2
for _ in $(seq 100); do
    [[ -S "$dir/redis.sock" ]] && { echo "$dir"; exit 0; }
    sleep 0.05
done
cat "$dir/redis.log" >&2
echo "redis-up: redis-server did not start" >&2
exit 1
