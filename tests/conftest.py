"""Session-wide test settings."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="session", autouse=True)
def _private_state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every usage fact is written ahead to an outbox (docs/billing.md); a runtime on a PostgreSQL ledger
    keeps it in the state directory by default. Tests (and the processes they start) use a private one,
    never the developer's `~/.local/state/chainwarden`."""
    previous = os.environ.get("CHAINWARDEN_STATE_DIR")
    os.environ["CHAINWARDEN_STATE_DIR"] = str(tmp_path_factory.mktemp("chainwarden-state"))
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop("CHAINWARDEN_STATE_DIR", None)
        else:
            os.environ["CHAINWARDEN_STATE_DIR"] = previous
