"""PostgreSQL store for the ledger (psycopg 3 + psycopg_pool): the multi-process / multi-machine backend.

Connections come from a pool, so a server restart costs the broken connections and nothing else: a failed
transaction is retried on a fresh connection (docs/billing.md, "When PostgreSQL goes away").
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from chainwarden._secrets import mask_secrets
from chainwarden.billing.errors import LedgerUnavailable
from chainwarden.billing.ledger import Failure, Ledger

T = TypeVar("T")

logger = logging.getLogger("chainwarden.billing")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS billing_accounts (
        id TEXT PRIMARY KEY,
        balance_credits BIGINT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS charge_receipts (
        id BIGSERIAL PRIMARY KEY,
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
        input_tokens BIGINT,
        output_tokens BIGINT,
        cache_read_tokens BIGINT,
        cache_write_tokens BIGINT,
        charged_credits BIGINT NOT NULL,
        response_cost_usd NUMERIC,
        usage_raw TEXT,
        commit_id TEXT,
        created_at TIMESTAMPTZ NOT NULL,
        UNIQUE (source_system, source_reference)
    )""",
    "CREATE INDEX IF NOT EXISTS charge_receipts_run ON charge_receipts (run_id, attempt)",
    "CREATE INDEX IF NOT EXISTS charge_receipts_request ON charge_receipts (request_id)",
    """CREATE TABLE IF NOT EXISTS credit_ledger (
        id BIGSERIAL PRIMARY KEY,
        billing_account_id TEXT NOT NULL,
        amount BIGINT NOT NULL,
        balance_after BIGINT NOT NULL,
        reason TEXT NOT NULL,
        reference TEXT NOT NULL,
        created_at TIMESTAMPTZ NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS credit_ledger_account ON credit_ledger (billing_account_id, id)",
    """CREATE TABLE IF NOT EXISTS runs (
        run_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        graph_id TEXT NOT NULL,
        billing_account_id TEXT NOT NULL,
        virtual_key_id TEXT NOT NULL,
        model TEXT NOT NULL,
        status TEXT NOT NULL,
        started_at TIMESTAMPTZ NOT NULL,
        ended_at TIMESTAMPTZ,
        prompt_tokens BIGINT NOT NULL,
        completion_tokens BIGINT NOT NULL,
        finish_reason TEXT,
        error TEXT,
        PRIMARY KEY (run_id, attempt)
    )""",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at)",
)
# Columns added after the first release; an older schema gets them on open.
_MIGRATIONS = (
    "ALTER TABLE charge_receipts ADD COLUMN IF NOT EXISTS usage_raw TEXT",
    "ALTER TABLE charge_receipts ADD COLUMN IF NOT EXISTS commit_id TEXT",
)
_SCHEMA_COLUMNS = (
    "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
    "AND table_name IN ('billing_accounts', 'charge_receipts', 'credit_ledger', 'runs')"
)
# Admin shutdown, crash shutdown, cannot connect now: the server is restarting.
_RESTART_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
# CREATE TABLE IF NOT EXISTS races between sessions (duplicate pg_type rows); one advisory lock serialises it.
_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(74616263)"


# A batch's receipt keys are locked as (this class, a 32-bit hash of the key): transaction-level advisory
# locks, released at COMMIT or ROLLBACK, in another key space than the DAG store's schema lock. Two keys
# sharing a hash only wait for each other; they cannot deadlock (docs/billing.md "Many facts in one
# transaction").
_KEY_LOCK_CLASS = 0x63776C6B  # "cwlk"
_LOCK_KEYS = (
    "SELECT pg_advisory_xact_lock(%s, k) FROM unnest(%s::int[]) WITH ORDINALITY AS t(k, n) ORDER BY n"
)


def _key_lock(ident: tuple[str, str]) -> int:
    """A stable 32-bit hash of a receipt key (the same in every process, unlike `hash`)."""
    source, reference = ident
    digest = hashlib.blake2b(f"{source}\x00{reference}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresLedger(Ledger):
    """Ledger in a PostgreSQL database given by a libpq DSN (its search_path decides the schema).

    `pool_size` connections at most; a transaction that fails because the connection broke (server restart,
    network) is retried on another connection with backoff for up to `retry_timeout_s` in total, then
    `LedgerUnavailable` is raised. Retrying a commit is safe: the idempotency key makes it a no-op when the
    first attempt landed.
    """

    _writable_ctes = True
    _json_batches = True

    def __init__(
        self,
        dsn: str,
        *,
        connect_timeout_s: int = 10,
        retry_timeout_s: float = 10.0,
        pool_size: int = 4,
    ) -> None:
        if not isinstance(dsn, str):
            raise TypeError(f"dsn must be a str, got {type(dsn).__name__}")
        if isinstance(connect_timeout_s, bool) or not isinstance(connect_timeout_s, int):
            raise TypeError(f"connect_timeout_s must be an int, got {type(connect_timeout_s).__name__}")
        if not 1 <= connect_timeout_s <= 3600:
            raise ValueError(f"connect_timeout_s must be between 1 and 3600, got {connect_timeout_s}")
        if isinstance(retry_timeout_s, bool) or not isinstance(retry_timeout_s, int | float):
            raise TypeError(f"retry_timeout_s must be a number, got {type(retry_timeout_s).__name__}")
        if not math.isfinite(retry_timeout_s) or not 0 <= retry_timeout_s <= 86_400:
            raise ValueError(f"retry_timeout_s must be between 0 and 86400, got {retry_timeout_s!r}")
        if isinstance(pool_size, bool) or not isinstance(pool_size, int):
            raise TypeError(f"pool_size must be an int, got {type(pool_size).__name__}")
        if not 1 <= pool_size <= 1000:
            raise ValueError(f"pool_size must be between 1 and 1000, got {pool_size}")
        super().__init__(retry_timeout_s=float(retry_timeout_s))
        # psycopg is the optional `postgres` extra: importing it lazily keeps SQLite-only installs working.
        try:
            import psycopg  # noqa: PLC0415
            import psycopg_pool  # noqa: PLC0415
            from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError(
                "PostgresLedger needs psycopg and psycopg_pool: pip install 'chainwarden[postgres]'"
            ) from error
        self._psycopg = psycopg
        self._pool_module = psycopg_pool
        try:
            params = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as error:  # docs/design.md §31: the DSN is shown masked
            raise ValueError(
                f"dsn {mask_secrets(dsn)!r} is not a PostgreSQL connection string: {mask_secrets(str(error))}"
            ) from None
        # Everything that selects the data (host, database, user, options such as search_path), never the
        # password.
        self._identity = "postgresql:" + " ".join(
            f"{k}={v}" for k, v in sorted(params.items()) if k not in ("password", "connect_timeout")
        )
        self._where = f"PostgreSQL ledger {params.get('host', 'localhost')}/{params.get('dbname', '')}"
        self._pool = psycopg_pool.ConnectionPool(
            dsn,
            min_size=1,
            max_size=pool_size,
            kwargs={"autocommit": True, "connect_timeout": connect_timeout_s},
            open=False,
            name="chainwarden-ledger",
            # The pool keeps trying to reconnect in the background for as long as the ledger lives.
            reconnect_timeout=365 * 86_400.0,
        )
        try:
            self._pool.open(wait=True, timeout=float(connect_timeout_s))
        except psycopg_pool.PoolTimeout as error:
            self._pool.close()
            raise LedgerUnavailable(
                self._where, attempts=1, waited_s=float(connect_timeout_s), reason=str(error)
            ) from error
        try:
            if not self._schema_complete():

                def create(cursor: Any) -> None:
                    cursor.execute(_SCHEMA_LOCK)
                    for statement in (*_SCHEMA, *_MIGRATIONS):
                        cursor.execute(statement)

                self._run_write(create)
        except BaseException:
            self._pool.close()
            raise

    @property
    def describe(self) -> str:
        return self._where

    @property
    def identity(self) -> str:
        return self._identity

    def _schema_complete(self) -> bool:
        # A read, so opening a ledger whose schema exists takes no lock.
        found = {(table, column) for table, column in self._read(_SCHEMA_COLUMNS, ())}
        tables = {table for table, _ in found}
        added = {("charge_receipts", "usage_raw"), ("charge_receipts", "commit_id")}
        return tables == {"billing_accounts", "charge_receipts", "credit_ledger", "runs"} and added <= found

    def _attempt(self, timeout_s: float, work: Callable[[Any], T]) -> T:
        with self._pool.connection(timeout=max(timeout_s, 0.001)) as conn:
            return work(conn)

    def _begin(self, conn: Any) -> Any:
        cursor = conn.cursor()
        cursor.execute("BEGIN")
        return cursor

    def _commit(self, cursor: Any) -> None:
        cursor.execute("COMMIT")
        cursor.close()

    def _rollback(self, cursor: Any) -> None:
        try:
            cursor.execute("ROLLBACK")
        except self._psycopg.Error:
            # A dead connection has nothing to roll back (the pool discards it); the original error is the
            # one worth raising.
            logger.debug("ROLLBACK failed", exc_info=True)
        cursor.close()

    def _sql(self, statement: str) -> str:
        return statement

    def _lock_keys(self, cursor: Any, idents: Sequence[tuple[str, str]]) -> None:
        # Ascending: every writer takes the locks it shares with another in the same order.
        cursor.execute(_LOCK_KEYS, (_KEY_LOCK_CLASS, sorted({_key_lock(i) for i in idents})))

    def _classify(self, error: Exception) -> Failure | None:
        errors = self._psycopg.errors
        if isinstance(error, errors.DeadlockDetected | errors.SerializationFailure | errors.LockNotAvailable):
            return Failure.LOCK
        if isinstance(error, self._pool_module.PoolTimeout):
            return Failure.CONNECTION
        if isinstance(error, self._psycopg.OperationalError):
            sqlstate = getattr(error, "sqlstate", None)
            # No SQLSTATE: the client lost the connection (closed, reset, server gone); class 08 is a
            # connection exception; 57P0x is a server shutting down or starting up.
            if sqlstate is None or sqlstate.startswith("08") or sqlstate in _RESTART_SQLSTATES:
                return Failure.CONNECTION
        return None

    def _encode_time(self, value: datetime) -> Any:
        return value

    def _decode_time(self, value: Any) -> datetime:
        return value  # type: ignore[no-any-return]

    def _encode_decimal(self, value: Decimal | None) -> Any:
        return value

    def _decode_decimal(self, value: Any) -> Decimal | None:
        return value  # type: ignore[no-any-return]

    def _close_connection(self) -> None:
        self._pool.close()
