#!/usr/bin/env bash
# Runs the Python test-suite. Servers the tests need are started here (see scripts/ for each).
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/pytest -q "$@"
