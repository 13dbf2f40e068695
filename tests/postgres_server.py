"""The PostgreSQL server of `make test` (scripts/test-python.sh starts it and exports its DSN), for every test
that needs one: one place that says how to find it, and what happens without it."""

from __future__ import annotations

import os

import pytest

PG_DSN_VAR = "CHAINWARDEN_TEST_POSTGRES_DSN"


def postgres_dsn() -> str:
    """The test server's DSN; skips only when a developer opted out (CHAINWARDEN_NO_POSTGRES=1, as
    `make wheels-check` does), fails otherwise."""
    dsn = os.environ.get(PG_DSN_VAR)
    if dsn:
        return dsn
    if os.environ.get("CHAINWARDEN_NO_POSTGRES") == "1":
        pytest.skip("CHAINWARDEN_NO_POSTGRES=1: PostgreSQL tests skipped")
    pytest.fail(f"{PG_DSN_VAR} is not set: run the tests through scripts/test-python.sh (make test-py)")
