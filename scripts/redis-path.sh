#!/usr/bin/env bash
# Prints the path of Debian's redis-server for the shared-budget tests (tests/containment/budget), which start
# their own throwaway servers on unix sockets in temp dirs. Installs Debian's redis-server package with apt-get when
# it is missing (CI runs as root on a fresh machine), the way scripts/postgres-up.sh installs PostgreSQL.
set -euo pipefail
find_redis() {
    local candidate
    for candidate in "${CHAINWARDEN_REDIS_SERVER:-}" /usr/bin/redis-server; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}
if find_redis; then
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "redis-path: no redis-server and not root; install Debian's redis-server package" >&2
    exit 1
fi
echo "redis-path: installing redis-server with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends redis-server >&2
find_redis || { echo "redis-path: redis-server installed but not found" >&2; exit 1; }
