#!/usr/bin/env bash
# Builds the release artefacts into dist/: one manylinux2014 (glibc 2.17) x86_64 wheel per CPython >= 3.11
# found on this machine (and per free-threaded CPython >= 3.14t: scripts/find-pythons.sh), the same set as
# musllinux_1_2 wheels, and the sdist. Then shows each wheel's tag with auditwheel, and fails when a tag is
# not the portable one asked for.
#
# Per-version wheels, not abi3: the limited API costs more than 5% on the recorder loop (benches/README.md,
# "abi3 or per-version wheels").
#
# zig (the `ziglang` wheel) is the linker: it targets old glibc symbol versions and musl without a container.
# Tools live in their own small venv (.venv-build), not in the development toolchain.
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_VENV="${BUILD_VENV:-.venv-build}"
DIST="${DIST:-dist}"
MUSL_TARGET=x86_64-unknown-linux-musl

if [[ ! -f "$BUILD_VENV/.stamp" || requirements-build.txt -nt "$BUILD_VENV/.stamp" ]]; then
    echo "wheels: creating $BUILD_VENV (maturin, ziglang, auditwheel)"
    python3 -m venv "$BUILD_VENV"
    "$BUILD_VENV/bin/python" -m pip install -q --upgrade pip
    "$BUILD_VENV/bin/python" -m pip install -q -r requirements-build.txt
    touch "$BUILD_VENV/.stamp"
fi
unset VIRTUAL_ENV PYO3_PYTHON
mapfile -t interpreters < <(scripts/find-pythons.sh)
# maturin runs `python -m ziglang` from the first python on PATH: the build venv's.
export PATH="$(pwd)/$BUILD_VENV/bin:$PATH"
if [[ ${#interpreters[@]} == 0 ]]; then
    echo "wheels: no CPython >= 3.11 found" >&2
    exit 1
fi
echo "wheels: interpreters: ${interpreters[*]}"
iargs=()
for py in "${interpreters[@]}"; do iargs+=(-i "$py"); done

rm -rf "$DIST"
mkdir -p "$DIST"
maturin build --release --quiet --zig --compatibility manylinux2014 "${iargs[@]}" --out "$DIST"

# The musl standard library comes with rustup; a machine without it (or without network) still gets the rest.
if rustup target list --installed 2>/dev/null | grep -qx "$MUSL_TARGET" \
    || rustup target add "$MUSL_TARGET" >/dev/null 2>&1; then
    maturin build --release --quiet --zig --target "$MUSL_TARGET" --compatibility musllinux_1_2 \
        "${iargs[@]}" --out "$DIST"
else
    echo "wheels: WARNING: rust target $MUSL_TARGET not installable here; no musllinux wheels" >&2
fi

maturin sdist --out "$DIST"
"$BUILD_VENV/bin/python" scripts/check-dist.py "$DIST"
