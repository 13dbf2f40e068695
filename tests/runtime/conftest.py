from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import postgres_dsn
from stores import PostgresSchema, Store, sqlite_store

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


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A ledger's database on each store (tests that must hold on both, with the same code)."""
    if request.param == "sqlite":
        yield sqlite_store(tmp_path)
        return
    with PostgresSchema(postgres_dsn()) as pg:
        yield pg
