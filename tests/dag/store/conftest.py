from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from store_urls import KINDS, new_url


@pytest.fixture(params=KINDS)
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty store of each kind."""
    return new_url(str(request.param), tmp_path)
