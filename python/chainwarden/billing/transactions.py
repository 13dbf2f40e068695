"""How a ledger call runs in its store: what a store (`SqliteLedger`, `PostgresLedger`) provides —
connections, transactions, its paramstyle, error classification and value codecs — and the retries every
ledger call makes within ONE budget (`retry_timeout_s`) before it raises `LedgerUnavailable`.

The ledger's own statements live in `billing/ledger.py` (the writes) and `billing/ledger_reads.py`.
"""

from __future__ import annotations

import abc
import logging
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from enum import Enum
from types import TracebackType
from typing import Any, Self, TypeVar

from chainwarden.billing.errors import LedgerUnavailable
from chainwarden.billing.metrics import METRICS
from chainwarden.errors import ClosedError

logger = logging.getLogger("chainwarden.billing")
T = TypeVar("T")

# Lock waits and deadlock victims are normal under concurrent writers; retrying the whole transaction is safe
# because it is idempotent (the receipt insert decides everything).
_MAX_LOCK_ATTEMPTS = 8
# Backoff between attempts after a lost connection: short first (a restart takes about a second), capped so a
# returning server is noticed quickly.
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 1.0


class Failure(Enum):
    """How a store classifies an error: whether (and how) the transaction may be tried again."""

    LOCK = "lock"  # lock wait / deadlock victim: retry at once
    CONNECTION = "connection"  # the server went away: retry after a backoff, on a fresh connection


class Transactions(abc.ABC):
    """The store side of a `Ledger`: connections, one transaction per call, retries within one budget.

    Thread-safe; usable as a context manager.
    """

    # Whether the store runs INSERT/UPDATE inside WITH (PostgreSQL does, SQLite does not): then a charge
    # and its ledger entry are one statement.
    _writable_ctes = False
    # Whether many rows go in as one JSON document the server unpacks (PostgreSQL) rather than as multi-row
    # VALUES lists (see `_insert_many`).
    _json_batches = False

    def __init__(self, *, retry_timeout_s: float) -> None:
        self._closed = False
        self._retry_timeout_s = retry_timeout_s

    # --- what a store provides -------------------------------------------------------------------------
    @property
    @abc.abstractmethod
    def describe(self) -> str:
        """Where the ledger lives, for error messages (never a password)."""

    @property
    @abc.abstractmethod
    def identity(self) -> str:
        """Which ledger this is (same data, same identity, across processes): outbox entries belong to one."""

    @abc.abstractmethod
    def _attempt(self, timeout_s: float, work: Callable[[Any], T]) -> T:
        """Runs `work(connection)` once on a DB-API connection this thread uses alone meanwhile, waiting at
        most `timeout_s` for it (or for a lock). A method, not a context manager: it is on every commit's
        path, and a generator-based block costs a commit as much as its Python does elsewhere."""

    @abc.abstractmethod
    def _begin(self, conn: Any) -> Any:
        """Starts a write transaction and returns a DB-API cursor."""

    @abc.abstractmethod
    def _commit(self, cursor: Any) -> None: ...

    @abc.abstractmethod
    def _rollback(self, cursor: Any) -> None: ...

    @abc.abstractmethod
    def _sql(self, statement: str) -> str:
        """Translates the `%s` placeholders used here to the store's paramstyle."""

    @abc.abstractmethod
    def _classify(self, error: Exception) -> Failure | None:
        """Whether the failed transaction may be tried again (None: it may not, the error is raised)."""

    @abc.abstractmethod
    def _encode_time(self, value: datetime) -> Any: ...

    @abc.abstractmethod
    def _decode_time(self, value: Any) -> datetime: ...

    @abc.abstractmethod
    def _encode_decimal(self, value: Decimal | None) -> Any: ...

    @abc.abstractmethod
    def _decode_decimal(self, value: Any) -> Decimal | None: ...

    @abc.abstractmethod
    def _close_connection(self) -> None: ...

    def _lock_keys(self, cursor: Any, idents: Sequence[tuple[str, str]]) -> None:  # noqa: B027 - a hook
        """Takes, in one order for every writer, what a batch's receipt inserts would otherwise wait on
        crosswise (docs/billing.md "Many facts in one transaction"). SQLite needs nothing: its write lock
        already serializes whole transactions."""

    # --- retries ---------------------------------------------------------------------------------------
    def _retrying(self, work: Callable[[Any], T]) -> T:
        """Runs `work(connection)`, retrying lock and connection failures within ONE budget per call.

        The budget is the whole call's: a locked SQLite file costs one busy timeout in total, not one per
        attempt, and a PostgreSQL server that stays away costs `retry_timeout_s` and then a typed error.
        """
        start = time.monotonic()
        attempts = 0
        backoff = _FIRST_BACKOFF_S
        while True:
            self._check_open()
            attempts += 1
            # The first attempt gets the whole budget as is (a store can keep its setting unchanged).
            remaining = self._retry_timeout_s
            if attempts > 1:
                remaining -= time.monotonic() - start
            try:
                return self._attempt(max(remaining, 0.0), work)
            except Exception as error:
                failure = self._classify(error)
                if failure is None:
                    raise
                waited = time.monotonic() - start
                remaining = self._retry_timeout_s - waited
                exhausted = remaining <= 0 or (failure is Failure.LOCK and attempts >= _MAX_LOCK_ATTEMPTS)
                if exhausted:
                    METRICS.increment("billing.ledger_unavailable")
                    raise LedgerUnavailable(
                        self.describe,
                        attempts=attempts,
                        waited_s=waited,
                        reason=f"{type(error).__name__}: {str(error).strip()}",
                    ) from error
                logger.warning(
                    "ledger %s: %s failure (%s), attempt %d, retrying",
                    self.describe,
                    failure.value,
                    type(error).__name__,
                    attempts,
                )
                # Also after a lock failure: some SQLite statements (a journal-mode switch) report BUSY at
                # once instead of waiting, and must not spin through the attempts.
                time.sleep(min(backoff, remaining))
                backoff = min(backoff * 2, _MAX_BACKOFF_S)

    def _run_write(self, body: Callable[[Any], T], *, durable: bool = True) -> T:
        """Runs `body(cursor)` in one transaction (all or nothing), with the retries above.

        `durable=False` is for history that a crash of the database's machine may cut short but a crash of
        this process must not (a run's event log, docs/runtime.md "Reconnect, resume and retry"): the commit
        does not wait for the disk. Money is always written durably."""

        def work(conn: Any) -> T:
            cursor = self._begin(conn) if durable else self._begin_relaxed(conn)
            try:
                result = body(cursor)
            except BaseException:
                self._rollback(cursor)
                if not durable:
                    self._end_relaxed(conn)
                raise
            self._commit(cursor)
            if not durable:
                self._end_relaxed(conn)
            return result

        return self._retrying(work)

    def _begin_relaxed(self, conn: Any) -> Any:
        """`_begin` for a transaction whose commit need not wait for the disk (a store may relax it)."""
        return self._begin(conn)

    def _end_relaxed(self, conn: Any) -> None:  # noqa: B027 - a hook
        """Undoes what `_begin_relaxed` changed on the connection, once its transaction ended."""

    #: The database's clock as epoch seconds, in SQL (leases are timed by it: docs/design.md §33).
    _NOW_EPOCH = ""
    # Whether the database is PostgreSQL (its advisory locks, its JSON functions); SQLite otherwise.
    _POSTGRES = False

    def listen(self, channel: str) -> Any:
        """A `chainwarden._sql.pg.Listener` on `channel` for a store whose commits notify (PostgreSQL);
        None for one where readers poll (SQLite). The runtime's readers of a run's events wait on it
        (docs/runtime.md "Reconnect, resume and retry")."""
        return None

    def _check_open(self) -> None:
        if self._closed:
            raise ClosedError("ledger is closed")

    def _read(self, statement: str, params: tuple[Any, ...]) -> list[Any]:
        def work(conn: Any) -> list[Any]:
            cursor = conn.cursor()
            try:
                cursor.execute(self._sql(statement), params)
                return list(cursor.fetchall())
            finally:
                cursor.close()

        return self._retrying(work)

    # --- lifetime --------------------------------------------------------------------------------------
    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._close_connection()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
