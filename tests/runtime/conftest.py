from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainwarden.billing import SqliteLedger
from chainwarden.runtime import Containment


@pytest.fixture(
    params=["chainwarden.containment", "veronica_core.containment"], ids=["async-wrap", "sync-wrap"]
)
def containment(request: pytest.FixtureRequest) -> Containment:
    """chainwarden's ExecutionContext (what InProcGraphExecutor uses by default; LLM calls go through its
    wrap_llm_call_async), and the reference it is a drop-in of, which has only the synchronous wrap and so
    exercises the executor's thread bridge."""
    return Containment(importlib.import_module(request.param))


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened
