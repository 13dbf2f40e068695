"""A locked SQLite ledger costs ONE busy timeout per call, in total; opening an existing ledger takes no lock.

The lock is real: a second connection holds the write lock (BEGIN IMMEDIATE) of the same file.
"""

from __future__ import annotations

import sqlite3
import threading
from decimal import Decimal
from pathlib import Path

import pytest
from sqlite_locks import write_locked

from chainwarden.billing import LedgerUnavailable, Pricing, SqliteLedger, UsageFact

PRICING = Pricing(markup=2.0)
FACT = UsageFact(
    run_id="run-1",
    attempt=0,
    source="litellm",
    billing_account_id="acct-1",
    virtual_key_id="vk-1",
    usage_unit_id="u-1",
    cost_usd=Decimal("0.00001"),
)


def begins(ledger: SqliteLedger) -> list[str]:
    """Records every BEGIN the ledger's connection starts (one per attempt)."""
    seen: list[str] = []
    ledger._conn.set_trace_callback(lambda sql: seen.append(sql) if sql.startswith("BEGIN") else None)
    return seen


def test_opening_an_existing_ledger_needs_no_write_lock(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path) as first:
        first.create_account("acct-1", balance_credits=500)
    with write_locked(path), SqliteLedger(path, busy_timeout_s=0.2) as second:
        # Reads go on beside the writer (WAL).
        assert second.balance("acct-1") == 500
        assert second.receipts() == []


def test_a_locked_ledger_fails_after_one_busy_timeout_in_total(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path, busy_timeout_s=0.3) as ledger:
        ledger.create_account("acct-1", balance_credits=500)
        attempts = begins(ledger)
        with write_locked(path), pytest.raises(LedgerUnavailable, match="database is locked") as locked:
            ledger.commit_usage_fact(FACT, call_index=0, pricing=PRICING)
        # One attempt used up the whole budget; no second wait was started.
        assert locked.value.attempts == 1
        assert attempts == ["BEGIN IMMEDIATE"]
        assert str(path) in str(locked.value)
        # Nothing changed, and the same fact commits once the lock is gone.
        assert (ledger.receipts(), ledger.balance("acct-1")) == ([], 500)
        assert ledger.commit_usage_fact(FACT, call_index=0, pricing=PRICING) is not None
        assert ledger.balance("acct-1") == 300


def test_a_lock_released_within_the_busy_timeout_is_waited_for(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path, busy_timeout_s=30) as ledger:
        holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.2, lambda: holder.execute("ROLLBACK"))
        release.start()
        try:
            assert ledger.commit_usage_fact(FACT, call_index=0, pricing=PRICING) is not None
        finally:
            release.join()
            holder.close()
        assert ledger.balance("acct-1") == -200


def test_a_new_file_that_is_locked_fails_typed_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    sqlite3.connect(path).close()
    # Switching a new file to WAL needs the lock: a typed error once the busy timeout is spent.
    with write_locked(path), pytest.raises(LedgerUnavailable, match=r"SQLite ledger .*database is locked"):
        SqliteLedger(path, busy_timeout_s=0.2)
    with SqliteLedger(path, busy_timeout_s=0.2) as ledger:
        assert ledger.receipts() == []


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), 10**9])
def test_busy_timeout_is_checked(tmp_path: Path, bad: float) -> None:
    with pytest.raises(ValueError, match="busy_timeout_s"):
        SqliteLedger(tmp_path / "x.sqlite3", busy_timeout_s=bad)
    assert not (tmp_path / "x.sqlite3").exists()
