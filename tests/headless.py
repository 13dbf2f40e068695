"""Debian's chromium for the browser tests, driven by Playwright; no browser is downloaded any other way.

`make test` finds (or installs) it with scripts/chromium-path.sh and passes it in CHAINWARDEN_CHROMIUM."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from playwright.sync_api import Browser, sync_playwright

__all__ = ["chromium", "launched"]


def chromium() -> str:
    path = (
        os.environ.get("CHAINWARDEN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not path:
        pytest.fail("no chromium: run `make test` (scripts/chromium-path.sh installs Debian's chromium)")
    return path


@contextmanager
def launched() -> Iterator[Browser]:
    """A headless chromium for one test module."""
    with sync_playwright() as pw:
        # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
        browser = pw.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()
