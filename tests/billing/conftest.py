from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from postgres_server import postgres_dsn
from stores import PostgresSchema, Store, sqlite_store

from chainwarden.billing import Ledger


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Every ledger test runs once per store, with the same test code."""
    if request.param == "sqlite":
        yield sqlite_store(tmp_path)
        return
    with PostgresSchema(postgres_dsn()) as pg:
        yield pg


@pytest.fixture
def ledger(store: Store) -> Iterator[Ledger]:
    with store.open() as opened:
        yield opened
