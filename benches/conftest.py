"""Shared benchmark settings: every comparison runs side by side in the same session."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def _collect_between_benchmarks() -> Iterator[None]:
    # Garbage left by one implementation must not be collected on the other's clock.
    gc.collect()
    yield
    gc.collect()
