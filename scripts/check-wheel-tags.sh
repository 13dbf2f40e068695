#!/usr/bin/env bash
# Confirms what scripts/build-wheels.sh wrote to DIST: every wheel's platform tag is the portable one its
# name claims (auditwheel reads the symbols the binary actually needs), and the sdist carries the licence,
# the README and the docs.
set -euo pipefail
dist="${1:-dist}"
auditwheel="${AUDITWHEEL:-.venv-build/bin/auditwheel}"
status=0
shopt -s nullglob
wheels=("$dist"/*.whl)
[[ ${#wheels[@]} -gt 0 ]] || { echo "check-wheel-tags: no wheel in $dist" >&2; exit 1; }
for whl in "${wheels[@]}"; do
    name="$(basename "$whl")"
    case "$name" in
        *manylinux_2_17_x86_64*|*manylinux2014_x86_64*) want=manylinux_2_17_x86_64 ;;
        *musllinux_1_2_x86_64*) want=musllinux_1_2_x86_64 ;;
        *) echo "check-wheel-tags: $name: not a portable Linux tag" >&2; status=1; continue ;;
    esac
    report="$("$auditwheel" show "$whl" 2>&1)" || { echo "$report" >&2; status=1; continue; }
    # auditwheel: 'This constrains the platform tag to "manylinux_2_17_x86_64"' (the most portable one).
    if grep -q "platform tag to \"$want\"" <<<"$report" || grep -q "\"$want\"" <<<"$report"; then
        echo "check-wheel-tags: $name: $want confirmed by auditwheel"
    else
        echo "check-wheel-tags: $name: auditwheel does not confirm $want:" >&2
        echo "$report" >&2
        status=1
    fi
done
sdists=("$dist"/*.tar.gz)
[[ ${#sdists[@]} == 1 ]] || { echo "check-wheel-tags: expected one sdist in $dist" >&2; exit 1; }
listing="$(tar -tzf "${sdists[0]}")"
for want in LICENSE README.md docs/recorder.md pyproject.toml Cargo.lock rust/core/Cargo.toml; do
    if ! grep -q "^[^/]*/$want\$" <<<"$listing"; then
        echo "check-wheel-tags: sdist lacks $want" >&2
        status=1
    fi
done
[[ $status == 0 ]] && echo "check-wheel-tags: sdist $(basename "${sdists[0]}") has LICENSE, README.md and docs/"
exit $status
