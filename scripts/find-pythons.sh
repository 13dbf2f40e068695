#!/usr/bin/env bash
# Prints the path of one working CPython per minor version >= 3.11 on this machine, one per line:
# from PATH (python3.X) or, failing that, from pyenv's versions directory. A pyenv shim for a version
# that is installed but not selected fails when run, so every candidate is run once before it is listed.
set -euo pipefail
pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
for minor in $(seq 11 20); do
    candidates=()
    if command -v "python3.$minor" >/dev/null 2>&1; then
        candidates+=("$(command -v "python3.$minor")")
    fi
    for dir in $(ls -d "$pyenv_root"/versions/3."$minor".* 2>/dev/null | sort -V -r); do
        candidates+=("$dir/bin/python3.$minor")
    done
    for py in "${candidates[@]}"; do
        # Only a regular (GIL) CPython of exactly this version; free-threaded builds get their own wheels later.
        if "$py" -c "import sys, sysconfig; sys.exit(not (sys.implementation.name == 'cpython' and sys.version_info[:2] == (3, $minor) and not sysconfig.get_config_var('Py_GIL_DISABLED')))" >/dev/null 2>&1; then
            # Resolve pyenv shims to the real interpreter so later steps need no pyenv.
            "$py" -c "import sys; print(getattr(sys, '_base_executable', None) or sys.executable)"
            break
        fi
    done
done
