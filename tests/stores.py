"""The two real ledger stores the billing tests run against: a SQLite file and a PostgreSQL schema."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg.conninfo import make_conninfo

from chainwarden.billing import Ledger, PostgresLedger, SqliteLedger


@dataclass
class Store:
    """Where one test's ledger lives; `open()` gives a new, independent connection to it."""

    kind: str
    target: str  # SQLite file path or PostgreSQL DSN

    def open(self) -> Ledger:
        if self.kind == "sqlite":
            return SqliteLedger(self.target)
        return PostgresLedger(self.target)

    def fail_inserts(self, table: str, column: str, value: str) -> None:
        """Installs a trigger so the store itself rejects rows of `table` whose `column` equals `value`."""
        if self.kind == "sqlite":
            with sqlite3.connect(self.target) as conn:
                conn.execute(
                    f"CREATE TRIGGER reject_{table} BEFORE INSERT ON {table} "
                    f"WHEN NEW.{column} = '{value}' BEGIN SELECT RAISE(ABORT, 'rejected by test'); END"
                )
            conn.close()
            return
        with psycopg.connect(self.target, autocommit=True) as conn:
            conn.execute(
                f"CREATE FUNCTION reject_{table}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                f"IF NEW.{column} = '{value}' THEN RAISE EXCEPTION 'rejected by test'; END IF; "
                "RETURN NEW; END $$"
            )
            conn.execute(
                f"CREATE TRIGGER reject_{table} BEFORE INSERT ON {table} "
                f"FOR EACH ROW EXECUTE FUNCTION reject_{table}()"
            )


def sqlite_store(tmp_path: Path) -> Store:
    return Store("sqlite", str(tmp_path / "ledger.sqlite3"))


class PostgresSchema:
    """A fresh schema per test in the throwaway server, dropped afterwards."""

    def __init__(self, base_dsn: str) -> None:
        self.base_dsn = base_dsn
        self.name = f"t_{uuid.uuid4().hex[:16]}"

    def __enter__(self) -> Store:
        with psycopg.connect(self.base_dsn, autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {self.name}")
        return Store("postgres", make_conninfo(self.base_dsn, options=f"-c search_path={self.name}"))

    def __exit__(self, *exc: object) -> None:
        with psycopg.connect(self.base_dsn, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {self.name} CASCADE")
