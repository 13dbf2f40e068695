#!/usr/bin/env bash
# Prints the path of a headless-capable Chromium for the HTML report's browser test.
# Installs Debian's chromium with apt-get when it is missing (CI runs as root on a fresh machine), the way
# scripts/postgres-up.sh installs PostgreSQL. No browser is downloaded by any other route.
set -euo pipefail
find_chromium() {
    local candidate
    for candidate in "${CHAINWARDEN_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
        if [[ -n "$candidate" && -x "$candidate" ]]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}
if find_chromium; then
    exit 0
fi
if [[ "$(id -u)" != 0 ]]; then
    echo "chromium-path: no chromium and not root; install Debian's chromium package" >&2
    exit 1
fi
echo "chromium-path: installing chromium with apt-get" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >&2
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >&2
find_chromium || { echo "chromium-path: chromium installed but not found" >&2; exit 1; }
