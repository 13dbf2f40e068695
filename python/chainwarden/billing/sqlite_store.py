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

from chainwarden._sql import Fault, classify, ensure, qmark
from chainwarden.billing.errors import LedgerUnavailable
from chainwarden.billing.ledger import Failure, Ledger
from chainwarden.billing.ledger_schema import schema
from chainwarden.errors import InvalidArgument, InvalidArgumentType

T = TypeVar("T")

_SCHEMA_VERSIONS = schema(postgres=False)


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
