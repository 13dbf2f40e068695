"""Session-wide test settings."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
from hypothesis import settings

# Hypothesis's per-example deadline (200 ms) is a timed assert: on a loaded machine it fails tests that are
# merely slow. Time is bounded by the per-test timeout instead (docs/testing.md "Timeouts and the slow
# marker").
settings.register_profile("chainwarden", deadline=None)
settings.load_profile("chainwarden")

# docs/testing.md "Timeouts and the slow marker": every test runs under pytest-timeout's default (`timeout`
# in pyproject.toml, a few seconds); a test marked `@pytest.mark.slow` gets this instead, unless it names its
# own `@pytest.mark.timeout(...)`.
SLOW_TIMEOUT_S = 120


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is not None and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(SLOW_TIMEOUT_S))


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


@pytest.fixture
def postgres_schema() -> Iterator[str]:
    """A libpq DSN to a fresh schema of the test server of `make test`, dropped afterwards."""
    import psycopg  # noqa: PLC0415 - only the tests that use PostgreSQL need it
    from postgres_server import postgres_dsn  # noqa: PLC0415 - beside this file, on the test path
    from psycopg.conninfo import make_conninfo  # noqa: PLC0415

    base = postgres_dsn()
    schema = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield make_conninfo(base, options=f"-c search_path={schema}")
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")
