#!/usr/bin/env bash
# Runs the Python test-suite. Servers the tests need are started here (see scripts/ for each).
set -euo pipefail
cd "$(dirname "$0")/.."

# A throwaway PostgreSQL for the ledger tests; a developer without one may set CHAINWARDEN_NO_POSTGRES=1
# (those tests then skip). Without that variable a server that cannot start fails the run.
if [[ "${CHAINWARDEN_NO_POSTGRES:-}" != 1 ]]; then
    pgdir="$(scripts/postgres-up.sh)"
    trap 'scripts/postgres-down.sh "$pgdir"' EXIT
    export CHAINWARDEN_TEST_POSTGRES_DSN="host=$pgdir port=5432 user=postgres dbname=postgres"
fi
# Debian's chromium for the HTML report's browser test (installed with apt-get when missing, like PostgreSQL).
CHAINWARDEN_CHROMIUM="$(scripts/chromium-path.sh)"
export CHAINWARDEN_CHROMIUM
# Debian's redis-server (installed with apt-get when missing, like PostgreSQL): the shared-budget tests start their
# own servers with it; the docs' example uses one started here, on a unix socket in a temp dir.
CHAINWARDEN_REDIS_SERVER="$(scripts/redis-path.sh)"
export CHAINWARDEN_REDIS_SERVER
redisdir="$(scripts/redis-up.sh)"
stop_servers() {
    scripts/redis-down.sh "$redisdir"
    if [[ -n "${pgdir:-}" ]]; then scripts/postgres-down.sh "$pgdir"; fi
}
trap stop_servers EXIT
export CHAINWARDEN_REDIS_URL="unix://$redisdir/redis.sock"
.venv/bin/pytest -q "$@"
