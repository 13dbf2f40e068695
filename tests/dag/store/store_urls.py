"""Where the store tests keep their graphs: a fresh SQLite file, or a fresh schema on the PostgreSQL server
that `scripts/test-python.sh` starts (the DSN in CHAINWARDEN_TEST_POSTGRES_DSN)."""

from __future__ import annotations

import uuid
from pathlib import Path
from urllib.parse import quote

import psycopg
from postgres_server import postgres_dsn
from psycopg.conninfo import conninfo_to_dict

KINDS = ["sqlite", "postgres"]


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


def raw_execute(url: str, statement: str, args: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    """Runs one statement (`%s` markers) on the store's database behind the store's back, as another
    program would; returns the rows it gives."""
    if url.startswith("sqlite:///"):
        import sqlite3  # noqa: PLC0415

        with sqlite3.connect(url[len("sqlite:///") :]) as conn:
            rows = conn.execute(statement.replace("%s", "?"), args).fetchall()
        conn.close()
        return rows
    with psycopg.connect(url, autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []
