"""The PostgreSQL server of `make test` (scripts/test-python.sh starts it and exports its DSN), for every test
that needs one: one place that says how to find it, and what happens without it."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from urllib.parse import quote

import pytest

PG_DSN_VAR = "CHAINWARDEN_TEST_POSTGRES_DSN"
SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"


def postgres_dsn() -> str:
    """The test server's DSN; skips only when a developer opted out (CHAINWARDEN_NO_POSTGRES=1, as
    `make wheels-check` does), fails otherwise."""
    dsn = os.environ.get(PG_DSN_VAR)
    if dsn:
        return dsn
    if os.environ.get("CHAINWARDEN_NO_POSTGRES") == "1":
        pytest.skip("CHAINWARDEN_NO_POSTGRES=1: PostgreSQL tests skipped")
    pytest.fail(f"{PG_DSN_VAR} is not set: run the tests through scripts/test-python.sh (make test-py)")


class DedicatedServer:
    """A throwaway PostgreSQL server of its own (scripts/postgres-up.sh) that a test may stop, start and
    restart without disturbing any other test."""

    def __init__(self) -> None:
        postgres_dsn()  # skips when the developer opted out of PostgreSQL, fails when it is missing
        self.datadir = subprocess.run(
            [str(SCRIPTS / "postgres-up.sh")], check=True, capture_output=True, text=True, timeout=120
        ).stdout.strip()
        self.dsn = f"host={self.datadir} port=5432 user=postgres dbname=postgres"
        self.socket = f"{self.datadir}/.s.PGSQL.5432"

    def ctl(self, action: str, *, check: bool = True) -> None:
        subprocess.run(
            [str(SCRIPTS / "postgres-ctl.sh"), self.datadir, action],
            check=check,
            timeout=60,
            capture_output=not check,
        )

    def url(self, schema: str = "public") -> str:
        """A `postgresql://` URL on this server whose connections use `schema` (created here)."""
        import psycopg  # noqa: PLC0415

        with psycopg.connect(self.dsn, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
        options = quote(f"-csearch_path={schema}", safe="")
        return (
            f"postgresql://postgres@/postgres?host={quote(self.datadir, safe='')}&port=5432&options={options}"
        )

    def close(self) -> None:
        subprocess.run([str(SCRIPTS / "postgres-down.sh"), self.datadir], check=True, timeout=60)
