"""SQLite store for the ledger: the embedded default (one file, WAL, safe across processes)."""

from __future__ import annotations

import math
import os
import sqlite3
import threading
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from chainwarden._sql import Fault, Schema, classify, columns, ensure, qmark, table_exists
from chainwarden.billing.errors import LedgerUnavailable
from chainwarden.billing.ledger import Failure, Ledger
from chainwarden.billing.run_store import CONTEXT_STEP, SQLITE_STEP
from chainwarden.errors import InvalidArgument, InvalidArgumentType

T = TypeVar("T")

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
    usage_raw TEXT,
    commit_id TEXT,
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
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    graph_id TEXT NOT NULL,
    billing_account_id TEXT NOT NULL,
    virtual_key_id TEXT NOT NULL,
    model TEXT NOT NULL,
    status TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT,
    error TEXT,
    PRIMARY KEY (run_id, attempt)
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at);
"""


# Columns added after the first release; an older file gets them on open (one write transaction, once).
_ADDED_COLUMNS = (("charge_receipts", "usage_raw", "TEXT"), ("charge_receipts", "commit_id", "TEXT"))
_TABLES = ("billing_accounts", "charge_receipts", "credit_ledger", "runs")


def _add_columns(cursor: Any) -> None:
    for table, column, kind in _ADDED_COLUMNS:
        if column not in columns(cursor, table):
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _legacy(cursor: Any) -> int:
    """A ledger file made before `chainwarden_schema`: version 1 without the added columns, 2 with them."""
    if not all(table_exists(cursor, table) for table in _TABLES):
        return 0
    present = columns(cursor, "charge_receipts")
    return 2 if all(column in present for _, column, _ in _ADDED_COLUMNS) else 1


# Version 1 creates every table as it is now (IF NOT EXISTS: a first-release file keeps its own), version 2
# adds the columns the first release lacked (a no-op on a new file), version 3 what runs that outlive their
# process need, version 4 a run's context (billing/run_store.py).
_SCHEMA_VERSIONS = Schema(
    "billing",
    (
        [statement for statement in _SCHEMA.split(";") if statement.strip()],
        [_add_columns],
        SQLITE_STEP,
        CONTEXT_STEP,
    ),
    legacy=_legacy,
)


class SqliteLedger(Ledger):
    """Ledger in one SQLite file (or ":memory:"); several processes may write the same file at once.

    `busy_timeout_s` is the longest one call waits for another writer's lock, in total (not per attempt);
    then the call raises `LedgerUnavailable` and nothing was written.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, busy_timeout_s: float = 60.0) -> None:
        if not isinstance(path, str | os.PathLike):
            raise InvalidArgumentType(
                f"path must be a str or PathLike, got {type(path).__name__}", argument="path"
            )
        if isinstance(busy_timeout_s, bool) or not isinstance(busy_timeout_s, int | float):
            raise InvalidArgumentType(
                f"busy_timeout_s must be a number, got {type(busy_timeout_s).__name__}",
                argument="busy_timeout_s",
            )
        if not math.isfinite(busy_timeout_s) or busy_timeout_s < 0 or busy_timeout_s > 86_400:
            raise InvalidArgument(
                f"busy_timeout_s must be between 0 and 86400, got {busy_timeout_s!r}",
                argument="busy_timeout_s",
            )
        super().__init__(retry_timeout_s=float(busy_timeout_s))
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._busy_ms = -1
        # Autocommit mode: transactions are explicit (BEGIN IMMEDIATE); Python opens none behind our back.
        try:
            self._conn = sqlite3.connect(self.path, timeout=0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as error:  # a missing directory, a path that is not a file: say which path
            raise LedgerUnavailable(self.describe, attempts=1, waited_s=0.0, reason=str(error)) from error
        try:
            self._set_busy_timeout(busy_timeout_s)
            # Reading the mode takes no lock; only a file that is not in WAL mode yet (a new one) is switched.
            mode = self._conn.execute("PRAGMA journal_mode").fetchone()[0]
            if self.path != ":memory:" and str(mode).lower() != "wal":
                self._retrying(lambda conn: conn.execute("PRAGMA journal_mode=WAL"))
            # Money: a committed receipt must survive a power cut, so every commit is synced.
            self._conn.execute("PRAGMA synchronous=FULL")
            # A file whose schema is current is opened with reads only (chainwarden._sql.schema): no write
            # lock is needed, so opening never waits behind another process's long transaction.
            self._retrying(lambda conn: ensure(conn, _SCHEMA_VERSIONS, too_new=self._too_new))
        except sqlite3.Error as error:  # not a database, read-only, a directory: say which path
            self._conn.close()
            raise LedgerUnavailable(self.describe, attempts=1, waited_s=0.0, reason=str(error)) from error
        except BaseException:
            self._conn.close()
            raise

    @property
    def describe(self) -> str:
        return f"SQLite ledger {self.path}"

    @property
    def identity(self) -> str:
        if self.path == ":memory:":
            return f"sqlite::memory:{id(self)}"
        return f"sqlite:{os.path.realpath(self.path)}"

    def _too_new(self, found: int) -> Exception:
        return ValueError(
            f"SQLite ledger {self.path} has billing schema version {found}; this chainwarden reads version "
            f"{_SCHEMA_VERSIONS.version} or older"
        )

    def _set_busy_timeout(self, seconds: float) -> None:
        ms = max(0, int(seconds * 1000))
        if ms != self._busy_ms:
            self._conn.execute(f"PRAGMA busy_timeout = {ms}")
            self._busy_ms = ms

    def _attempt(self, timeout_s: float, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            self._check_open()
            # What is left of this call's budget: the busy handler never waits longer in total.
            self._set_busy_timeout(timeout_s)
            return work(self._conn)

    def _begin(self, conn: Any) -> Any:
        cursor = conn.cursor()
        # IMMEDIATE takes the write lock up front: a deferred transaction that upgrades later can fail with
        # SQLITE_BUSY without waiting, which would turn contention into errors.
        cursor.execute("BEGIN IMMEDIATE")
        return cursor

    def _commit(self, cursor: Any) -> None:
        cursor.execute("COMMIT")
        cursor.close()

    # WAL with synchronous=NORMAL: the commit is in the WAL (the page cache) when it returns, which a killed
    # process cannot take with it; only a power cut may roll back its last transactions (docs/billing.md).
    def _begin_relaxed(self, conn: Any) -> Any:
        conn.execute("PRAGMA synchronous=NORMAL")
        return self._begin(conn)

    def _end_relaxed(self, conn: Any) -> None:
        conn.execute("PRAGMA synchronous=FULL")

    _NOW_EPOCH = "((julianday('now') - 2440587.5) * 86400.0)"

    def _rollback(self, cursor: Any) -> None:
        if self._conn.in_transaction:
            cursor.execute("ROLLBACK")
        cursor.close()

    def _sql(self, statement: str) -> str:
        return qmark(statement)

    def _classify(self, error: Exception) -> Failure | None:
        return Failure.LOCK if classify(error) is Fault.LOCK else None

    def _encode_time(self, value: datetime) -> Any:
        return value.isoformat()

    def _decode_time(self, value: Any) -> datetime:
        return datetime.fromisoformat(value)

    def _encode_decimal(self, value: Decimal | None) -> Any:
        return None if value is None else str(value)

    def _decode_decimal(self, value: Any) -> Decimal | None:
        return None if value is None else Decimal(value)

    def _close_connection(self) -> None:
        with self._lock:
            self._conn.close()
