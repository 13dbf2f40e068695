"""Where the store tests keep their graphs: a fresh SQLite file, or a fresh schema on the PostgreSQL server
that `scripts/test-python.sh` starts (the DSN in CHAINWARDEN_TEST_POSTGRES_DSN)."""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

PG_DSN_VAR = "CHAINWARDEN_TEST_POSTGRES_DSN"
KINDS = ["sqlite", "postgres"]


def postgres_dsn() -> str:
    dsn = os.environ.get(PG_DSN_VAR)
    if dsn:
        return dsn
    if os.environ.get("CHAINWARDEN_NO_POSTGRES") == "1":
        pytest.skip("CHAINWARDEN_NO_POSTGRES=1: PostgreSQL store tests skipped")
    pytest.fail(f"{PG_DSN_VAR} is not set: run the tests through scripts/test-python.sh (make test-py)")


def postgres_url(schema: str) -> str:
    """A `postgresql://` URL on the test server whose connections use `schema` (created here)."""
    dsn = postgres_dsn()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA IF NOT EXISTS "{schema}"')
    info = conninfo_to_dict(dsn)
    query = f"host={quote(str(info['host']), safe='')}&port={info.get('port', 5432)}"
    query += f"&options={quote(f'-csearch_path={schema}', safe='')}"
    return f"postgresql://{info.get('user', 'postgres')}@/{info.get('dbname', 'postgres')}?{query}"


def new_url(kind: str, tmp_path: Path) -> str:
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / f'dag-{uuid.uuid4().hex[:8]}.db'}"
    return postgres_url(f"dag_{uuid.uuid4().hex[:12]}")
