"""The extension module as a shared library that Python loads with `dlopen` (docs/dag.md "Memory")."""

from __future__ import annotations

import shutil
import subprocess

import chainwarden._core


def test_the_extension_needs_no_static_tls_block() -> None:
    """A library loaded after start-up that uses initial-exec thread-local storage takes its room from glibc's
    small static TLS surplus; once other libraries have used that up, the import fails with "cannot allocate
    memory in static TLS block". The module's allocator (mimalloc) is therefore built for local-dynamic TLS,
    and the linker marks no part of the module as needing the static block."""
    readelf = shutil.which("readelf")
    assert readelf is not None, "readelf (binutils) is needed to read the module's dynamic section"
    dynamic = subprocess.run(
        [readelf, "--dynamic", "--wide", chainwarden._core.__file__],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    flags = [line for line in dynamic.splitlines() if "(FLAGS)" in line]
    assert flags, dynamic  # the section was read: a linked module always has its FLAGS entry
    assert not any("STATIC_TLS" in line for line in flags), flags
