"""SQLite store for the ledger: the embedded default (one file, WAL, safe across processes)."""

from __future__ import annotations

import os
import sqlite3
from datetime import datetime
from decimal import Decimal
from typing import Any

from chainwarden.billing.ledger import Ledger

# Amounts are TEXT so a Decimal round-trips exactly; SQLite has no exact numeric type.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS billing_accounts (
    id TEXT PRIMARY KEY,
    balance_credits INTEGER NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS charge_receipts (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    source_system TEXT NOT NULL,
    source_reference TEXT NOT NULL,
    run_id TEXT NOT NULL,
    attempt INTEGER NOT NULL DEFAULT 0,
    usage_unit_id TEXT NOT NULL,
    billing_account_id TEXT NOT NULL,
    virtual_key_id TEXT NOT NULL,
    request_id TEXT,
    provider TEXT,
    model TEXT,
    input_tokens INTEGER,
    output_tokens INTEGER,
    cache_read_tokens INTEGER,
    cache_write_tokens INTEGER,
    charged_credits INTEGER NOT NULL,
    response_cost_usd TEXT,
    created_at TEXT NOT NULL,
    UNIQUE (source_system, source_reference)
);
CREATE INDEX IF NOT EXISTS charge_receipts_run ON charge_receipts (run_id, attempt);
CREATE INDEX IF NOT EXISTS charge_receipts_request ON charge_receipts (request_id);
CREATE TABLE IF NOT EXISTS credit_ledger (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    billing_account_id TEXT NOT NULL,
    amount INTEGER NOT NULL,
    balance_after INTEGER NOT NULL,
    reason TEXT NOT NULL,
    reference TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS credit_ledger_account ON credit_ledger (billing_account_id, id);
"""


class SqliteLedger(Ledger):
    """Ledger in one SQLite file (or ":memory:"); several processes may write the same file at once."""

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, busy_timeout_s: float = 60.0) -> None:
        super().__init__()
        if not isinstance(path, str | os.PathLike):
            raise TypeError(f"path must be a str or PathLike, got {type(path).__name__}")
        self.path = os.fspath(path)
        # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE); Python opens none behind our back.
        self._conn = sqlite3.connect(
            self.path, timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        try:
            if self.path != ":memory:":
                self._conn.execute("PRAGMA journal_mode=WAL")
            # Money: a committed receipt must survive a power cut, so every commit is synced.
            self._conn.execute("PRAGMA synchronous=FULL")

            def create(cursor: Any) -> None:
                # executescript() would commit our transaction first; statements go one by one instead.
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        cursor.execute(statement)

            self._run_write(create)
        except BaseException:
            self._conn.close()
            raise

    def _begin(self) -> Any:
        cursor = self._conn.cursor()
        # IMMEDIATE takes the write lock up front: a deferred transaction that upgrades later can fail with
        # SQLITE_BUSY without waiting, which would turn contention into errors.
        cursor.execute("BEGIN IMMEDIATE")
        return cursor

    def _commit(self, cursor: Any) -> None:
        cursor.execute("COMMIT")
        cursor.close()

    def _rollback(self, cursor: Any) -> None:
        if self._conn.in_transaction:
            cursor.execute("ROLLBACK")
        cursor.close()

    def _read_cursor(self) -> Any:
        return self._conn.cursor()

    def _sql(self, statement: str) -> str:
        return statement.replace("%s", "?")

    def _is_transient(self, error: Exception) -> bool:
        return isinstance(error, sqlite3.OperationalError) and "locked" in str(error)

    def _encode_time(self, value: datetime) -> Any:
        return value.isoformat()

    def _decode_time(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def _encode_decimal(self, value: Decimal | None) -> Any:
        return None if value is None else str(value)

    def _decode_decimal(self, value: Any) -> Decimal | None:
        return None if value is None else Decimal(value)

    def _close_connection(self) -> None:
        self._conn.close()
