"""Schema versions, kept for every store in one table, `chainwarden_schema` (one row per component).

A component's schema is a list of steps; step `i` brings version `i` to `i + 1`, so a fresh database runs
every step and an older one the steps it lacks, in one transaction under a lock (PostgreSQL: one advisory
lock shared by every component; SQLite: the file's write lock). A database at the current version is
recognised by one read, without taking any lock. A database newer than this chainwarden is refused, never
written to.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chainwarden._sql.params import qmark

#: Runs one step's statement: SQL text, or a function given the cursor (for a step that must look first).
Statement = str | Callable[[Any], None]

_TABLE = "chainwarden_schema"
_CREATE = f"CREATE TABLE IF NOT EXISTS {_TABLE} (component TEXT PRIMARY KEY, version INTEGER NOT NULL)"
_READ = f"SELECT version FROM {_TABLE} WHERE component = %s"
_WRITE = (
    f"INSERT INTO {_TABLE} (component, version) VALUES (%s, %s) "
    "ON CONFLICT (component) DO UPDATE SET version = excluded.version"
)
#: The advisory lock every schema change takes ("cwsc"): one for all components, since they share the
#: versions table and PostgreSQL's CREATE TABLE IF NOT EXISTS races between sessions.
_LOCK = 0x63777363


@dataclass(frozen=True)
class Schema:
    """A component's tables as steps; `legacy` tells the version of a database made before versions were
    kept here (0 when it holds none of the component's tables)."""

    component: str
    steps: Sequence[Sequence[Statement]]
    legacy: Callable[[Any], int] | None = None

    @property
    def version(self) -> int:
        return len(self.steps)


def ensure(conn: Any, schema: Schema, *, too_new: Callable[[int], Exception]) -> int:
    """Brings the database behind `conn` (a DB-API connection in autocommit mode: sqlite3 with
    `isolation_level=None`, or psycopg with `autocommit=True`) to `schema.version`; returns the version it
    found. A newer database raises `too_new(found)` and is left as it is."""
    sqlite = isinstance(conn, sqlite3.Connection)
    found = _current(conn, schema.component, sqlite)
    if found == schema.version:
        return found
    if found is not None and found > schema.version:
        raise too_new(found)
    cur = conn.cursor()
    cur.execute("BEGIN IMMEDIATE" if sqlite else "BEGIN")
    try:
        if not sqlite:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        cur.execute(_CREATE)
        cur.execute(_sql(_READ, sqlite), (schema.component,))
        row = cur.fetchone()
        if row is not None:
            found = int(row[0])
        elif schema.legacy is not None:
            found = schema.legacy(cur)
        else:
            found = 0
        if found > schema.version:
            raise too_new(found)
        for step in schema.steps[found:]:
            for statement in step:
                if callable(statement):
                    statement(cur)
                else:
                    cur.execute(statement)
        if found != schema.version:
            cur.execute(_sql(_WRITE, sqlite), (schema.component, schema.version))
        cur.execute("COMMIT")
    except BaseException:
        _rollback(cur)
        raise
    finally:
        cur.close()
    return found


def table_exists(cur: Any, table: str) -> bool:
    """Whether `table` exists (in the current schema on PostgreSQL), read inside the caller's transaction."""
    if isinstance(cur, sqlite3.Cursor):
        cur.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
    else:
        cur.execute("SELECT to_regclass(%s) IS NOT NULL", (table,))
        return bool(cur.fetchone()[0])
    return cur.fetchone() is not None


def columns(cur: Any, table: str) -> set[str]:
    """The column names of `table` (empty when it does not exist)."""
    if isinstance(cur, sqlite3.Cursor):
        return {row[1] for row in cur.execute(f"PRAGMA table_info({table})").fetchall()}
    cur.execute(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND table_name = %s",
        (table,),
    )
    return {row[0] for row in cur.fetchall()}


def _current(conn: Any, component: str, sqlite: bool) -> int | None:
    """The recorded version, read without a lock; None when nothing is recorded (or no table yet)."""
    cur = conn.cursor()
    try:
        if sqlite:
            if not table_exists(cur, _TABLE):
                return None
            cur.execute(qmark(_READ), (component,))
            row = cur.fetchone()
        else:
            cur.execute("SELECT to_regclass(%s) IS NOT NULL", (_TABLE,))
            if not cur.fetchone()[0]:
                return None
            cur.execute(_READ, (component,))
            row = cur.fetchone()
    finally:
        cur.close()
    return None if row is None else int(row[0])


def _sql(statement: str, sqlite: bool) -> str:
    return qmark(statement) if sqlite else statement


def _rollback(cur: Any) -> None:
    # A broken connection has nothing left to roll back.
    with contextlib.suppress(Exception):
        cur.execute("ROLLBACK")
