"""The ledger's tables, written once for both stores, and their versions (`chainwarden._sql.schema`).

The two stores differ only in column types: SQLite keeps amounts of money and instants as TEXT (it has no
exact numeric type, and text round-trips a Decimal and an ISO time exactly) and its 64-bit integers as
INTEGER; PostgreSQL has NUMERIC, TIMESTAMPTZ and BIGINT. Each statement names the kind of its columns and
`schema(postgres)` spells them for a store.
"""

from __future__ import annotations

from typing import Any

from chainwarden._sql import Schema, columns, table_exists
from chainwarden.billing.run_store import CONTEXT_STEP, POSTGRES_STEP, SQLITE_STEP

#: The column kinds the statements below name, spelled for SQLite and for PostgreSQL.
_TYPES = {
    "serial": ("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY"),
    "big": ("INTEGER", "BIGINT"),
    "money": ("TEXT", "NUMERIC"),
    "time": ("TEXT", "TIMESTAMPTZ"),
}

_TABLES_V1 = (
    """CREATE TABLE IF NOT EXISTS billing_accounts (
        id TEXT PRIMARY KEY,
        balance_credits {big} NOT NULL,
        created_at {time} NOT NULL
    )""",
    """CREATE TABLE IF NOT EXISTS charge_receipts (
        id {serial},
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
        input_tokens {big},
        output_tokens {big},
        cache_read_tokens {big},
        cache_write_tokens {big},
        charged_credits {big} NOT NULL,
        response_cost_usd {money},
        usage_raw TEXT,
        commit_id TEXT,
        created_at {time} NOT NULL,
        UNIQUE (source_system, source_reference)
    )""",
    "CREATE INDEX IF NOT EXISTS charge_receipts_run ON charge_receipts (run_id, attempt)",
    "CREATE INDEX IF NOT EXISTS charge_receipts_request ON charge_receipts (request_id)",
    """CREATE TABLE IF NOT EXISTS credit_ledger (
        id {serial},
        billing_account_id TEXT NOT NULL,
        amount {big} NOT NULL,
        balance_after {big} NOT NULL,
        reason TEXT NOT NULL,
        reference TEXT NOT NULL,
        created_at {time} NOT NULL
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
        started_at {time} NOT NULL,
        ended_at {time},
        prompt_tokens {big} NOT NULL,
        completion_tokens {big} NOT NULL,
        finish_reason TEXT,
        error TEXT,
        PRIMARY KEY (run_id, attempt)
    )""",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started_at)",
)

#: Columns added after the first release; an older ledger gets them on open.
_ADDED_COLUMNS = (("charge_receipts", "usage_raw", "TEXT"), ("charge_receipts", "commit_id", "TEXT"))
#: The first release's tables.
TABLES = ("billing_accounts", "charge_receipts", "credit_ledger", "runs")


def _add_columns(cursor: Any) -> None:
    # Looked up first: SQLite has no ADD COLUMN IF NOT EXISTS.
    present = columns(cursor, "charge_receipts")
    for table, column, kind in _ADDED_COLUMNS:
        if column not in present:
            cursor.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")


def _legacy(cursor: Any) -> int:
    """A ledger made before `chainwarden_schema`: version 1 without the added columns, 2 with them."""
    if not all(table_exists(cursor, table) for table in TABLES):
        return 0
    present = columns(cursor, "charge_receipts")
    return 2 if all(column in present for _, column, _ in _ADDED_COLUMNS) else 1


def tables(*, postgres: bool) -> list[str]:
    """Version 1's statements as `postgres` (or SQLite) spells them."""
    spelled = {kind: types[1 if postgres else 0] for kind, types in _TYPES.items()}
    return [statement.format(**spelled) for statement in _TABLES_V1]


def schema(*, postgres: bool) -> Schema:
    """The ledger's versions for a store. Version 1 creates every table as it is now (IF NOT EXISTS: a
    first-release ledger keeps its own), version 2 adds the columns the first release lacked (a no-op on a
    new one), version 3 what runs that outlive their process need, version 4 a run's context
    (billing/run_store.py)."""
    runs = POSTGRES_STEP if postgres else SQLITE_STEP
    return Schema("billing", (tables(postgres=postgres), [_add_columns], runs, CONTEXT_STEP), legacy=_legacy)
