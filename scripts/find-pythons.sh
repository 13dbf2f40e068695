#!/usr/bin/env bash
# Prints the path of one working CPython per minor version >= 3.11 on this machine, one per line: from PATH
# (python3.X) or, failing that, from pyenv's versions directory; then, from 3.14 on, the free-threaded build of
# that version when there is one (python3.Xt, or pyenv's 3.X.Yt): it takes wheels of its own (cp3Xt), and the
# native module declares it needs no GIL. A pyenv shim for a version that is installed but not selected fails
# when run, so every candidate is run once before it is listed.
set -euo pipefail
pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
# Prints the first candidate that is CPython 3.<minor> with the GIL (free=0) or without it (free=1).
first_working() {
    local minor="$1" free="$2"
    shift 2
    local py
    for py in "$@"; do
        if "$py" -c "import sys, sysconfig; sys.exit(not (sys.implementation.name == 'cpython' and sys.version_info[:2] == (3, $minor) and bool(sysconfig.get_config_var('Py_GIL_DISABLED')) == bool($free)))" >/dev/null 2>&1; then
            # Resolve pyenv shims to the real interpreter so later steps need no pyenv.
            "$py" -c "import sys; print(getattr(sys, '_base_executable', None) or sys.executable)"
            return
        fi
    done
}
for minor in $(seq 11 20); do
    candidates=()
    if command -v "python3.$minor" >/dev/null 2>&1; then
        candidates+=("$(command -v "python3.$minor")")
    fi
    for dir in $(ls -d "$pyenv_root"/versions/3."$minor".* 2>/dev/null | grep -v 't$' | sort -V -r); do
        candidates+=("$dir/bin/python3.$minor")
    done
    first_working "$minor" 0 ${candidates[@]+"${candidates[@]}"}
    # Free-threaded builds from 3.14: PyO3 builds no module for the experimental 3.13t.
    if ((minor >= 14)); then
        candidates=()
        if command -v "python3.${minor}t" >/dev/null 2>&1; then
            candidates+=("$(command -v "python3.${minor}t")")
        fi
        for dir in $(ls -d "$pyenv_root"/versions/3."$minor".*t 2>/dev/null | sort -V -r); do
            candidates+=("$dir/bin/python3.${minor}t")
        done
        first_working "$minor" 1 ${candidates[@]+"${candidates[@]}"}
    fi
done
