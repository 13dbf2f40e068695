#!/usr/bin/env bash
# Stops a server made by scripts/redis-up.sh and removes its directory.
set -euo pipefail
dir="$1"
if [[ -f "$dir/redis.pid" ]]; then
    pid="$(cat "$dir/redis.pid")"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 100); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.05
    done
fi
rm -rf "$dir"
