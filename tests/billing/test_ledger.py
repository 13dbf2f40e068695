"""Ledger behaviour, identical on SQLite and PostgreSQL (every test runs on both via the `store` fixture)."""

from __future__ import annotations

import logging
import threading
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from stores import Store
from usage_facts import fact

from chainwarden.billing import (
    METRICS,
    ChargeReceipt,
    Ledger,
    LedgerUnavailable,
    Pricing,
    SqliteLedger,
    UsageFact,
    compute_idempotency_key,
)

PRICING = Pricing(markup=2.0)


def commit(ledger: Ledger, f: UsageFact, call_index: int = 0) -> ChargeReceipt | None:
    return ledger.commit_usage_fact(f, call_index=call_index, pricing=PRICING)


def state(ledger: Ledger, account: str = "acct-1") -> tuple[list[ChargeReceipt], int, int]:
    return ledger.receipts(), ledger.balance(account), len(ledger.ledger_entries(account))


def test_a_receipt_debits_and_logs_in_one_go(ledger: Ledger) -> None:
    receipt = commit(ledger, fact(), call_index=0)
    assert receipt is not None
    assert receipt.source_system == "litellm"
    assert receipt.source_reference == "run-1/0/call-1"
    assert receipt.charged_credits == 200
    assert receipt.response_cost_usd == Decimal("0.00002")
    assert (receipt.input_tokens, receipt.output_tokens, receipt.model) == (100, 20, "gpt-x")
    assert receipt.created_at.tzinfo is not None
    assert ledger.receipts() == [receipt]
    assert ledger.balance("acct-1") == -200
    [entry] = ledger.ledger_entries("acct-1")
    assert (entry.amount, entry.balance_after, entry.reason, entry.reference) == (
        -200,
        -200,
        "charge_receipt",
        "run-1/0/call-1",
    )


def test_replaying_identical_facts_writes_one_receipt(ledger: Ledger) -> None:
    ledger.create_account("acct-1", balance_credits=1_000)
    first = commit(ledger, fact())
    replays = [commit(ledger, fact()) for _ in range(5)]
    assert first is not None
    assert replays == [None] * 5
    assert len(ledger.receipts()) == 1
    assert ledger.balance("acct-1") == 800
    assert [e.reason for e in ledger.ledger_entries("acct-1")] == ["opening_balance", "charge_receipt"]


def test_first_write_wins(ledger: Ledger) -> None:
    commit(ledger, fact(cost_usd=Decimal("0.001"), output_tokens=1))
    assert commit(ledger, fact(cost_usd=Decimal("5"), output_tokens=999)) is None
    [receipt] = ledger.receipts()
    assert (receipt.charged_credits, receipt.output_tokens) == (20_000, 1)
    assert ledger.balance("acct-1") == -20_000


@pytest.mark.parametrize(
    ("other", "expected_reference"),
    [
        ({"source": "anthropic_sdk"}, "run-1/0/call-1"),
        ({"run_id": "run-2"}, "run-2/0/call-1"),
        ({"attempt": 1}, "run-1/1/call-1"),
    ],
    ids=["per-source-system", "per-run", "per-attempt"],
)
def test_idempotency_is_scoped(ledger: Ledger, other: dict[str, Any], expected_reference: str) -> None:
    assert commit(ledger, fact()) is not None
    second = commit(ledger, fact(**other))
    assert second is not None
    assert second.source_reference == expected_reference
    assert len(ledger.receipts()) == 2
    assert ledger.balance("acct-1") == -400


def test_ingress_request_id_is_correlation_not_identity(ledger: Ledger) -> None:
    first = ledger.commit_usage_fact(fact(), call_index=0, pricing=PRICING, ingress_request_id="req-a")
    again = ledger.commit_usage_fact(fact(), call_index=0, pricing=PRICING, ingress_request_id="req-b")
    assert first is not None and first.ingress_request_id == "req-a"
    assert again is None
    assert [r.ingress_request_id for r in ledger.receipts()] == ["req-a"]


def test_missing_usage_unit_id_falls_back_deterministically(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    before = METRICS.get("billing.missing_usage_unit_id")
    with caplog.at_level(logging.ERROR, logger="chainwarden.billing"):
        first = commit(ledger, fact(unit=None), call_index=3)
    assert first is not None
    assert first.source_reference == "run-1/0/MISSING:run-1/3"
    assert "billing.missing_usage_unit_id" in caplog.text
    assert METRICS.get("billing.missing_usage_unit_id") == before + 1
    # The same run replayed reports the same call index: no second charge.
    assert commit(ledger, fact(unit=None), call_index=3) is None
    other = commit(ledger, fact(unit=None), call_index=4)
    assert other is not None and other.source_reference == "run-1/0/MISSING:run-1/4"
    assert ledger.balance("acct-1") == -400


def test_unknown_account_is_created_at_zero_and_may_go_negative(ledger: Ledger) -> None:
    with pytest.raises(KeyError):
        ledger.balance("acct-new")
    commit(ledger, fact(billing_account_id="acct-new", cost_usd=Decimal("1")))
    assert ledger.balance("acct-new") == -20_000_000


def test_create_account_with_opening_balance(ledger: Ledger) -> None:
    ledger.create_account("acct-1", balance_credits=5_000)
    ledger.create_account("acct-2")
    [opening] = ledger.ledger_entries("acct-1")
    assert (opening.amount, opening.balance_after, opening.reason) == (5_000, 5_000, "opening_balance")
    assert ledger.ledger_entries("acct-2") == []
    assert ledger.balance("acct-2") == 0


def test_create_account_twice_is_an_error_and_changes_nothing(ledger: Ledger) -> None:
    ledger.create_account("acct-1", balance_credits=5_000)
    with pytest.raises(ValueError, match="already exists"):
        ledger.create_account("acct-1", balance_credits=7)
    assert ledger.balance("acct-1") == 5_000
    assert len(ledger.ledger_entries("acct-1")) == 1


def test_fact_without_cost_is_recorded_at_zero_and_logged(
    ledger: Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="chainwarden.billing"):
        receipt = commit(ledger, fact(cost_usd=None))
    assert receipt is not None
    assert (receipt.charged_credits, receipt.response_cost_usd) == (0, None)
    assert ledger.receipts()[0].response_cost_usd is None
    assert "billing.missing_cost_usd" in caplog.text
    assert ledger.balance("acct-1") == 0
    assert commit(ledger, fact(cost_usd=None)) is None


def test_balance_after_follows_each_entry(ledger: Ledger) -> None:
    ledger.create_account("acct-1", balance_credits=1_000)
    for i, cost in enumerate(["0.00001", "0.0000015", "0.00002"]):
        commit(ledger, fact(unit=f"c{i}", cost_usd=Decimal(cost)))
    entries = ledger.ledger_entries("acct-1")
    assert [e.amount for e in entries] == [1_000, -200, -30, -400]
    assert [e.balance_after for e in entries] == [1_000, 800, 770, 370]
    assert ledger.balance("acct-1") == 370


def test_receipts_filter_by_run(ledger: Ledger) -> None:
    commit(ledger, fact(run_id="run-a"))
    commit(ledger, fact(run_id="run-b"))
    commit(ledger, fact(run_id="run-a", unit="call-2"))
    assert [r.source_reference for r in ledger.receipts(run_id="run-a")] == [
        "run-a/0/call-1",
        "run-a/0/call-2",
    ]
    assert ledger.receipts(run_id="nope") == []


def test_receipts_survive_reopening(store: Store) -> None:
    with store.open() as first:
        written = commit(first, fact())
    with store.open() as second:
        assert second.receipts() == [written]
        assert commit(second, fact()) is None
        assert second.balance("acct-1") == -200


def test_a_failing_entry_rolls_back_the_receipt_and_the_debit(store: Store) -> None:
    with store.open() as ledger:
        ledger.create_account("acct-1", balance_credits=1_000)
        store.fail_inserts("credit_ledger", "reference", "run-1/0/bad")
        with pytest.raises(Exception, match="rejected by test"):
            commit(ledger, fact(unit="bad"))
        assert state(ledger) == ([], 1_000, 1)
        # The ledger stays usable and the next fact commits normally.
        assert commit(ledger, fact(unit="good")) is not None
        assert ledger.balance("acct-1") == 800


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda led: led.commit_usage_fact("not a fact", call_index=0, pricing=PRICING), TypeError),
        (lambda led: led.commit_usage_fact(fact(), call_index=-1, pricing=PRICING), ValueError),
        (lambda led: led.commit_usage_fact(fact(), call_index=1.0, pricing=PRICING), TypeError),
        (lambda led: led.commit_usage_fact(fact(), call_index=0, pricing=2.0), TypeError),
        (
            lambda led: led.commit_usage_fact(fact(), call_index=0, pricing=PRICING, ingress_request_id=1),
            TypeError,
        ),
        (lambda led: led.create_account("", 0), ValueError),
        (lambda led: led.create_account(7, 0), TypeError),
        (lambda led: led.create_account("acct-2", 1.5), TypeError),
        (lambda led: led.create_account("acct-2", 2**63), ValueError),
        (lambda led: led.balance(None), TypeError),
        (lambda led: led.ledger_entries("nobody"), KeyError),
        (lambda led: led.receipts(run_id=3), TypeError),
    ],
)
def test_bad_input_is_a_typed_error_and_changes_nothing(
    ledger: Ledger, call: Any, error: type[Exception]
) -> None:
    ledger.create_account("acct-1", balance_credits=10)
    commit(ledger, fact())
    before = state(ledger)
    with pytest.raises(error):
        call(ledger)
    assert state(ledger) == before
    with pytest.raises(KeyError):
        ledger.balance("acct-2")


def test_closed_ledger_refuses_work(store: Store) -> None:
    ledger = store.open()
    ledger.close()
    ledger.close()
    with pytest.raises(ValueError, match="closed"):
        commit(ledger, fact())


def test_one_ledger_object_is_thread_safe(ledger: Ledger) -> None:
    facts = [fact(unit=f"c{i}") for i in range(50)]
    barrier = threading.Barrier(4)
    results: list[ChargeReceipt | None] = []
    lock = threading.Lock()

    def writer() -> None:
        barrier.wait()
        for f in facts:
            r = commit(ledger, f)
            with lock:
                results.append(r)

    threads = [threading.Thread(target=writer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(r is not None for r in results) == 50
    assert len(ledger.receipts()) == 50
    assert ledger.balance("acct-1") == -200 * 50


def test_compute_idempotency_key_matches_the_receipt(ledger: Ledger) -> None:
    f = fact(run_id="r9", attempt=2, unit="msg_xyz")
    receipt = commit(ledger, f)
    assert receipt is not None
    assert receipt.source_reference == compute_idempotency_key(f) == "r9/2/msg_xyz"
    assert commit(ledger, replace(f, model="other")) is None


@pytest.mark.parametrize("where", ["missing-dir/ledger.sqlite3", "a-directory", "not-a-database.txt"])
def test_a_ledger_that_cannot_open_names_its_path(tmp_path: Path, where: str) -> None:
    """It raised a bare sqlite3.OperationalError ('unable to open database file') naming nothing."""
    (tmp_path / "a-directory").mkdir()
    (tmp_path / "not-a-database.txt").write_text("hello, this is not SQLite " * 100)
    path = tmp_path / where
    with pytest.raises(LedgerUnavailable) as error:
        SqliteLedger(path)
    assert str(path) in str(error.value)
    assert error.value.store == f"SQLite ledger {path}"
