"""The ledger and the outbox keep their schema versions in `chainwarden_schema` (chainwarden._sql): a file of
the first release (without the columns added since) is upgraded in place with its data, and a file newer than
this chainwarden is refused before anything is written."""

from __future__ import annotations

import dataclasses
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import psycopg
import pytest
from postgres_server import postgres_dsn
from stores import PostgresSchema

from chainwarden.billing import PostgresLedger, Pricing, RunRecord, SqliteLedger, UsageFact
from chainwarden.billing.facts import Billable
from chainwarden.billing.outbox import Outbox

FIRST_RELEASE_LEDGER = """
CREATE TABLE billing_accounts (id TEXT PRIMARY KEY, balance_credits INTEGER NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE charge_receipts (
    id INTEGER PRIMARY KEY AUTOINCREMENT, source_system TEXT NOT NULL, source_reference TEXT NOT NULL,
    run_id TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, usage_unit_id TEXT NOT NULL,
    billing_account_id TEXT NOT NULL, virtual_key_id TEXT NOT NULL, request_id TEXT, provider TEXT,
    model TEXT,
    input_tokens INTEGER, output_tokens INTEGER, cache_read_tokens INTEGER, cache_write_tokens INTEGER,
    charged_credits INTEGER NOT NULL, response_cost_usd TEXT, created_at TEXT NOT NULL,
    UNIQUE (source_system, source_reference));
CREATE TABLE credit_ledger (id INTEGER PRIMARY KEY AUTOINCREMENT, billing_account_id TEXT NOT NULL,
    amount INTEGER NOT NULL, balance_after INTEGER NOT NULL, reason TEXT NOT NULL, reference TEXT NOT NULL,
    created_at TEXT NOT NULL);
CREATE TABLE runs (run_id TEXT NOT NULL, attempt INTEGER NOT NULL, graph_id TEXT NOT NULL,
    billing_account_id TEXT NOT NULL, virtual_key_id TEXT NOT NULL, model TEXT NOT NULL, status TEXT NOT NULL,
    started_at TEXT NOT NULL, ended_at TEXT, prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    finish_reason TEXT, error TEXT, PRIMARY KEY (run_id, attempt));
INSERT INTO billing_accounts VALUES ('acct', 500, '2026-01-01T00:00:00+00:00');
"""


def fact(unit: str) -> UsageFact:
    return UsageFact(
        run_id="run-up",
        attempt=0,
        source="litellm",
        billing_account_id="acct",
        virtual_key_id="vk",
        usage_unit_id=unit,
        cost_usd=Decimal("0.0001"),
    )


def test_a_first_release_ledger_file_is_upgraded_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.executescript(FIRST_RELEASE_LEDGER)
    conn.close()
    with SqliteLedger(path) as ledger:
        assert ledger.balance("acct") == 500
        receipt = ledger.commit_usage_fact(fact("u1"), call_index=0, pricing=Pricing(markup=1.0))
        assert receipt is not None and ledger.balance("acct") == 500 - receipt.charged_credits
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute(
            "SELECT version FROM chainwarden_schema WHERE component = 'billing'"
        ).fetchone() == (4,)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(charge_receipts)")}
        assert {"usage_raw", "commit_id"} <= columns
        # Step 3: runs that outlive their process (billing/run_store.py).
        columns = {row[1] for row in conn.execute("PRAGMA table_info(runs)")}
        assert {"request", "owner", "lease_until", "events"} <= columns
        assert "context" in columns  # step 4: a run's context
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"run_events", "run_calls", "credit_holds"} <= tables
        conn.execute("UPDATE chainwarden_schema SET version = 7 WHERE component = 'billing'")
    conn.close()
    with pytest.raises(ValueError, match="billing schema version 7"):
        SqliteLedger(path)


def test_a_newer_postgres_ledger_is_refused() -> None:
    with PostgresSchema(postgres_dsn()) as store:
        PostgresLedger(store.target).close()
        with psycopg.connect(store.target, autocommit=True) as conn:
            conn.execute("UPDATE chainwarden_schema SET version = 9 WHERE component = 'billing'")
        with pytest.raises(ValueError, match="billing schema version 9"):
            PostgresLedger(store.target)


def version_3_run(ledger_target: SqliteLedger | PostgresLedger) -> None:
    ledger_target.record_run(
        RunRecord(
            run_id="run-old",
            attempt=0,
            graph_id="inproc:agent",
            billing_account_id="acct",
            virtual_key_id="vk",
            model="sim-1",
            status="running",
            started_at=datetime(2026, 1, 1, tzinfo=UTC),
        )
    )


def test_a_version_3_sqlite_ledger_gets_the_run_context_column(tmp_path: Path) -> None:
    path = tmp_path / "v3.sqlite3"
    with SqliteLedger(path) as ledger:
        version_3_run(ledger)
    with closing(sqlite3.connect(path)) as conn, conn:  # as a file written before step 4 existed
        conn.execute("ALTER TABLE runs DROP COLUMN context")
        conn.execute("UPDATE chainwarden_schema SET version = 3 WHERE component = 'billing'")
    conn.close()
    with SqliteLedger(path) as ledger:
        assert ledger.runs()[0].context is None
        ledger.record_run(dataclasses.replace(ledger.runs()[0], context={"user_id": "u-2"}))
        assert ledger.runs()[0].context == {"user_id": "u-2"}
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute(
            "SELECT version FROM chainwarden_schema WHERE component = 'billing'"
        ).fetchone() == (4,)
    conn.close()


def test_a_version_3_postgres_ledger_gets_the_run_context_column() -> None:
    with PostgresSchema(postgres_dsn()) as store:
        with PostgresLedger(store.target) as ledger:
            version_3_run(ledger)
        with psycopg.connect(store.target, autocommit=True) as conn:
            conn.execute("ALTER TABLE runs DROP COLUMN context")
            conn.execute("UPDATE chainwarden_schema SET version = 3 WHERE component = 'billing'")
        with PostgresLedger(store.target) as ledger:
            assert ledger.runs()[0].context is None
            ledger.record_run(dataclasses.replace(ledger.runs()[0], context={"tags": ["eu"]}))
            assert ledger.runs()[0].context == {"tags": ["eu"]}
        with psycopg.connect(store.target, autocommit=True) as conn:
            row = conn.execute(
                "SELECT version FROM chainwarden_schema WHERE component = 'billing'"
            ).fetchone()
            assert row == (4,)


def test_a_first_release_outbox_gets_its_owner_column(tmp_path: Path) -> None:
    path = tmp_path / "old.outbox.sqlite3"
    with closing(sqlite3.connect(path)) as conn, conn:
        conn.execute(
            "CREATE TABLE usage_outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, ledger TEXT NOT NULL, "
            "source_system TEXT NOT NULL, source_reference TEXT NOT NULL, run_id TEXT NOT NULL, "
            "fact TEXT NOT NULL, call_index INTEGER NOT NULL, ingress_request_id TEXT, markup TEXT NOT NULL, "
            "parked_at REAL NOT NULL, "
            "attempts INTEGER NOT NULL DEFAULT 0, next_attempt_at REAL NOT NULL DEFAULT 0, last_error TEXT, "
            "UNIQUE (ledger, source_system, source_reference))"
        )
    conn.close()
    outbox = Outbox(path)
    try:
        assert outbox.put(
            "L",
            Billable.resolve(fact("u1"), 0),
            pricing=Pricing(markup=1.0),
            ingress_request_id=None,
            error="x",
        )
        assert outbox.pending("L") == ["run-up/0/u1"]
        seqs = outbox.write_ahead(
            "L", [Billable.resolve(fact("u2"), 0)], pricing=Pricing(markup=1.0), ingress_request_id=None
        )
        assert len(seqs) == 1
    finally:
        outbox.close()
    with closing(sqlite3.connect(path)) as conn, conn:
        assert conn.execute(
            "SELECT version FROM chainwarden_schema WHERE component = 'outbox'"
        ).fetchone() == (2,)
    conn.close()


LEDGER_TABLES = ("billing_accounts", "charge_receipts", "credit_ledger", "runs", "run_events", "run_calls")


def test_both_stores_make_the_same_ledger_tables(tmp_path: Path) -> None:
    """The ledger's tables are written once (billing/ledger_schema.py) and spelled per store: a new SQLite
    file and a new PostgreSQL schema hold the same tables with the same columns, in the same order."""
    path = tmp_path / "new.sqlite3"
    SqliteLedger(path).close()
    conn = sqlite3.connect(path)
    on_sqlite = {t: [r[1] for r in conn.execute(f"PRAGMA table_info({t})")] for t in LEDGER_TABLES}
    conn.close()
    with PostgresSchema(postgres_dsn()) as store:
        PostgresLedger(store.target).close()
        with psycopg.connect(store.target, autocommit=True) as pg:
            on_postgres = {
                t: [
                    r[0]
                    for r in pg.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_schema = "
                        "current_schema() AND table_name = %s ORDER BY ordinal_position",
                        (t,),
                    )
                ]
                for t in LEDGER_TABLES
            }
    assert on_sqlite == on_postgres
    assert all(on_sqlite.values())
    assert on_sqlite["charge_receipts"][-2:] == ["commit_id", "created_at"]
