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
from chainwarden._sql import Fault, Unreachable, classify, ensure
from chainwarden._sql.pg import Listener, Pool, psycopg_modules
from chainwarden.billing.errors import LedgerUnavailable
from chainwarden.billing.ledger import Failure, Ledger
from chainwarden.billing.ledger_schema import schema
from chainwarden.errors import InvalidArgument, InvalidArgumentType

T = TypeVar("T")

logger = logging.getLogger("chainwarden.billing")

_SCHEMA_VERSIONS = schema(postgres=True)


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
            raise InvalidArgumentType(f"dsn must be a str, got {type(dsn).__name__}", argument="dsn")
        if isinstance(connect_timeout_s, bool) or not isinstance(connect_timeout_s, int):
            raise InvalidArgumentType(
                f"connect_timeout_s must be an int, got {type(connect_timeout_s).__name__}",
                argument="connect_timeout_s",
            )
        if not 1 <= connect_timeout_s <= 3600:
            raise InvalidArgument(
                f"connect_timeout_s must be between 1 and 3600, got {connect_timeout_s}",
                argument="connect_timeout_s",
            )
        if isinstance(retry_timeout_s, bool) or not isinstance(retry_timeout_s, int | float):
            raise InvalidArgumentType(
                f"retry_timeout_s must be a number, got {type(retry_timeout_s).__name__}",
                argument="retry_timeout_s",
            )
        if not math.isfinite(retry_timeout_s) or not 0 <= retry_timeout_s <= 86_400:
            raise InvalidArgument(
                f"retry_timeout_s must be between 0 and 86400, got {retry_timeout_s!r}",
                argument="retry_timeout_s",
            )
        if isinstance(pool_size, bool) or not isinstance(pool_size, int):
            raise InvalidArgumentType(
                f"pool_size must be an int, got {type(pool_size).__name__}", argument="pool_size"
            )
        if not 1 <= pool_size <= 1000:
            raise InvalidArgument(
                f"pool_size must be between 1 and 1000, got {pool_size}", argument="pool_size"
            )
        super().__init__(retry_timeout_s=float(retry_timeout_s))
        # psycopg is the optional `postgres` extra: importing it lazily keeps SQLite-only installs working.
        self._psycopg, _ = psycopg_modules("PostgresLedger")
        from psycopg.conninfo import conninfo_to_dict  # noqa: PLC0415

        try:
            params = conninfo_to_dict(dsn)
        except self._psycopg.ProgrammingError as error:  # docs/design.md §31: the DSN is shown masked
            raise InvalidArgument(
                f"dsn {mask_secrets(dsn)!r} is not a PostgreSQL connection string: "
                f"{mask_secrets(str(error))}",
                argument="dsn",
            ) from None
        # Everything that selects the data (host, database, user, options such as search_path), never the
        # password.
        self._identity = "postgresql:" + " ".join(
            f"{k}={v}" for k, v in sorted(params.items()) if k not in ("password", "connect_timeout")
        )
        self._dsn = dsn  # kept for the listener of run events (never shown: `describe` is what is shown)
        self._where = f"PostgreSQL ledger {params.get('host', 'localhost')}/{params.get('dbname', '')}"
        try:
            # The one SQL layer's pool (chainwarden._sql): it keeps reconnecting for as long as the ledger
            # lives, and a caller that finds the server back gets a fresh pool at once.
            self._pool = Pool(
                dsn,
                name="chainwarden-ledger",
                max_size=pool_size,
                connect_timeout_s=float(connect_timeout_s),
                what="PostgresLedger",
            )
        except Unreachable as error:
            raise LedgerUnavailable(
                self._where, attempts=1, waited_s=float(connect_timeout_s), reason=str(error)
            ) from None
        try:
            self._retrying(lambda conn: ensure(conn, _SCHEMA_VERSIONS, too_new=self._too_new))
        except BaseException:
            self._pool.close()
            raise

    def _too_new(self, found: int) -> Exception:
        return ValueError(
            f"{self._where} has billing schema version {found}; this chainwarden reads version "
            f"{_SCHEMA_VERSIONS.version} or older"
        )

    @property
    def describe(self) -> str:
        return self._where

    @property
    def identity(self) -> str:
        return self._identity

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

    def _begin_relaxed(self, conn: Any) -> Any:
        # Committed at once in the server's memory, flushed within a few hundred milliseconds: only a crash
        # of the server itself may lose the last such transactions (never money: only ever history).
        cursor = self._begin(conn)
        cursor.execute("SET LOCAL synchronous_commit = off")
        return cursor

    _NOW_EPOCH = "extract(epoch FROM clock_timestamp())::float8"
    _POSTGRES = True

    def listen(self, channel: str) -> Listener:
        return Listener(self._dsn, channel, what="PostgresLedger")

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
        # chainwarden._sql decides what an error means. A commit whose connection broke may have landed:
        # trying it again is still safe here, the idempotency key (and the commit id) make it a no-op.
        fault = classify(error)
        if fault is Fault.LOCK:
            return Failure.LOCK
        if fault in (Fault.CONNECTION, Fault.AMBIGUOUS):
            return Failure.CONNECTION
        return None

    def _encode_time(self, value: datetime) -> Any:
        return value

    def _decode_time(self, value: Any) -> datetime:
        return value  # type: ignore[no-any-return]

    def _encode_decimal(self, value: Decimal | None) -> Any:
        # Its exact text: the server reads it as the numeric column it goes into, and a batch's JSON document
        # takes it as is (no encoder callback per row).
        return None if value is None else str(value)

    def _decode_decimal(self, value: Any) -> Decimal | None:
        return value  # type: ignore[no-any-return]

    def _close_connection(self) -> None:
        self._pool.close()
