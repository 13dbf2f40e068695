"""PostgreSQL store for the ledger (psycopg 3): the multi-process / multi-machine backend."""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

from chainwarden.billing.ledger import Ledger

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
)
# CREATE TABLE IF NOT EXISTS races between sessions (duplicate pg_type rows); one advisory lock serialises it.
_SCHEMA_LOCK = "SELECT pg_advisory_xact_lock(74616263)"


class PostgresLedger(Ledger):
    """Ledger in a PostgreSQL database given by a libpq DSN (its search_path decides the schema)."""

    def __init__(self, dsn: str, *, connect_timeout_s: int = 30) -> None:
        super().__init__()
        if not isinstance(dsn, str):
            raise TypeError(f"dsn must be a str, got {type(dsn).__name__}")
        # psycopg is the optional `postgres` extra: importing it lazily keeps SQLite-only installs working.
        try:
            import psycopg  # noqa: PLC0415
        except ImportError as error:  # pragma: no cover - depends on the install
            raise ImportError("PostgresLedger needs psycopg: pip install 'chainwarden[postgres]'") from error
        self._psycopg = psycopg
        self._conn = psycopg.connect(dsn, autocommit=True, connect_timeout=connect_timeout_s)
        try:

            def create(cursor: Any) -> None:
                cursor.execute(_SCHEMA_LOCK)
                for statement in _SCHEMA:
                    cursor.execute(statement)

            self._run_write(create)
        except BaseException:
            self._conn.close()
            raise

    def _begin(self) -> Any:
        cursor = self._conn.cursor()
        cursor.execute("BEGIN")
        return cursor

    def _commit(self, cursor: Any) -> None:
        cursor.execute("COMMIT")
        cursor.close()

    def _rollback(self, cursor: Any) -> None:
        try:
            cursor.execute("ROLLBACK")
        except self._psycopg.Error:
            # A dead connection has nothing to roll back; the original error is the one worth raising.
            logger.warning("ROLLBACK failed", exc_info=True)
        cursor.close()

    def _read_cursor(self) -> Any:
        return self._conn.cursor()

    def _sql(self, statement: str) -> str:
        return statement

    def _is_transient(self, error: Exception) -> bool:
        errors = self._psycopg.errors
        return isinstance(
            error, errors.DeadlockDetected | errors.SerializationFailure | errors.LockNotAvailable
        )

    def _encode_time(self, value: datetime) -> Any:
        return value

    def _decode_time(self, value: Any) -> datetime:
        return value  # type: ignore[no-any-return]

    def _encode_decimal(self, value: Decimal | None) -> Any:
        return value

    def _decode_decimal(self, value: Any) -> Decimal | None:
        return value  # type: ignore[no-any-return]

    def _close_connection(self) -> None:
        self._conn.close()
