#!/usr/bin/env bash
# `make demo`: builds the package into a runtime-only venv (maturin + the package and its `cli` and
# `langgraph` extras, nothing of the test toolchain) and runs `chainwarden demo`. Quiet: one progress line per step; the
# build's own output is shown only when it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-demo}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
# On a terminal the progress line rewrites itself; in a log it is one line per step.
if [[ -t 2 ]]; then
    step() { printf '\r\033[K[demo] %s' "$1" >&2; }
    done_steps() { printf '\r\033[K' >&2; }
else
    step() { printf '[demo] %s\n' "$1" >&2; }
    done_steps() { :; }
fi
fail() { done_steps; cat "$log" >&2; echo "[demo] failed: $1" >&2; exit 1; }

if [[ ! -x "$venv/bin/maturin" ]]; then
    step "1/3 creating $venv (maturin only)"
    { python3 -m venv "$venv" && "$venv/bin/python" -m pip install -q "maturin>=1.9,<2"; } >"$log" 2>&1 \
        || fail "creating $venv"
fi
step "2/3 building chainwarden (release; the first build compiles the Rust core, a few minutes)"
VIRTUAL_ENV="$(pwd)/$venv" PYO3_PYTHON="$(pwd)/$venv/bin/python" \
    "$venv/bin/maturin" develop --release --quiet --extras cli,langgraph --manifest-path rust/py/Cargo.toml >"$log" 2>&1 \
    || fail "building chainwarden"
step "3/3 running chainwarden demo"
done_steps
"$venv/bin/chainwarden" demo
