"""`Ledger.commit_usage_facts`: many facts in one transaction, exactly once per fact, on both stores."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from batch_writer import batch
from stores import Store
from usage_facts import fact

from chainwarden.billing import ChargeReceipt, Ledger, Pricing

PRICING = Pricing(markup=2.0)
HERE = Path(__file__).resolve().parent


def state(ledger: Ledger, *accounts: str) -> tuple[list[ChargeReceipt], list[Any]]:
    return ledger.receipts(), [(a, ledger.balance(a), ledger.ledger_entries(a)) for a in accounts]


def test_a_batch_commits_every_fact_in_order_with_consistent_balances(ledger: Ledger) -> None:
    ledger.create_account("acct-1", 1_000)
    facts = [fact(f"u{i}", billing_account_id=f"acct-{1 + i % 2}") for i in range(7)]
    receipts = ledger.commit_usage_facts(facts, pricing=PRICING, ingress_request_id="req-1")
    assert [r.source_reference for r in receipts] == [f"run-1/0/u{i}" for i in range(7)]
    assert all(r.charged_credits == 200 and r.ingress_request_id == "req-1" for r in receipts)
    assert ledger.receipts() == receipts
    assert ledger.balance("acct-1") == 1_000 - 4 * 200
    assert ledger.balance("acct-2") == -3 * 200  # created at 0 by the batch
    entries = ledger.ledger_entries("acct-1")
    assert [e.balance_after for e in entries] == [1_000, 800, 600, 400, 200]
    assert [e.reference for e in entries[1:]] == [f"run-1/0/u{i}" for i in (0, 2, 4, 6)]
    assert [e.balance_after for e in ledger.ledger_entries("acct-2")] == [-200, -400, -600]


def test_duplicates_in_the_batch_and_already_committed_get_the_original_receipt(ledger: Ledger) -> None:
    first = ledger.commit_usage_fact(fact("u0"), call_index=0, pricing=PRICING)
    assert first is not None
    # u0 was committed before (even at another price), u1 appears twice, a fact without id gets MISSING:.
    facts = [fact("u1"), fact("u0", cost_usd=Decimal(1)), fact("u1", cost_usd=Decimal(1)), fact(None)]
    receipts = ledger.commit_usage_facts(facts, pricing=Pricing(markup=1.0), call_indexes=[5, 6, 7, 8])
    assert receipts[1] == first
    assert receipts[2] == receipts[0]
    assert receipts[0].charged_credits == 100
    assert receipts[3].source_reference == "run-1/0/MISSING:run-1/8"
    assert len(ledger.receipts()) == 3
    assert ledger.balance("acct-1") == -(200 + 100 + 100)
    # Committing the same batch again charges nothing and returns the same receipts.
    before = state(ledger, "acct-1")
    assert (
        ledger.commit_usage_facts(facts, pricing=Pricing(markup=1.0), call_indexes=[5, 6, 7, 8]) == receipts
    )
    assert state(ledger, "acct-1") == before


def test_a_bad_fact_names_itself_and_commits_nothing(ledger: Ledger) -> None:
    ledger.commit_usage_fact(fact("u0"), call_index=0, pricing=PRICING)
    before = state(ledger, "acct-1")
    with pytest.raises(TypeError, match=r"facts\[2\]: expected a UsageFact, got dict"):
        ledger.commit_usage_facts([fact("a"), fact("b"), {"run_id": "x"}], pricing=PRICING)  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"facts\[1\]: call_index must not be negative"):
        ledger.commit_usage_facts([fact("a"), fact(None)], pricing=PRICING, call_indexes=[0, -1])
    with pytest.raises(ValueError, match="call_indexes has 1 items for 2 facts"):
        ledger.commit_usage_facts([fact("a"), fact("b")], pricing=PRICING, call_indexes=[0])
    with pytest.raises(TypeError, match="facts must be a sequence"):
        ledger.commit_usage_facts(fact("a"), pricing=PRICING)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="pricing must be a Pricing"):
        ledger.commit_usage_facts([fact("a")], pricing=2.0)  # type: ignore[arg-type]
    assert state(ledger, "acct-1") == before
    assert ledger.commit_usage_facts([], pricing=PRICING) == []


def test_a_refusal_inside_the_transaction_rolls_the_whole_batch_back(store: Store) -> None:
    with store.open() as ledger:
        store.fail_inserts("charge_receipts", "usage_unit_id", "poison")
        ledger.create_account("acct-1", 500)
        before = state(ledger, "acct-1")
        with pytest.raises(Exception, match="rejected by test"):
            ledger.commit_usage_facts([fact("a"), fact("b"), fact("poison"), fact("c")], pricing=PRICING)
        assert state(ledger, "acct-1") == before
        # A balance the 64-bit column cannot hold: refused, and the batch's other account untouched too.
        ledger.create_account("deep", -(2**63 - 1) + 10)
        with pytest.raises(ValueError, match="'deep' below the ledger's 64-bit range"):
            ledger.commit_usage_facts(
                [fact("x", billing_account_id="acct-1"), fact("y", billing_account_id="deep")],
                pricing=PRICING,
            )
        assert state(ledger, "acct-1") == before
        assert ledger.balance("deep") == -(2**63 - 1) + 10


def test_batch_and_single_commits_agree(store: Store) -> None:
    facts = [fact(f"u{i}", cost_usd=Decimal(i) / 1000, billing_account_id=f"a{i % 3}") for i in range(20)]
    with store.open() as ledger:
        batched = ledger.commit_usage_facts(facts, pricing=PRICING)
        singles = [
            ledger.commit_usage_fact(replace(f, run_id="run-2"), call_index=0, pricing=PRICING) for f in facts
        ]
        for b, s in zip(batched, singles, strict=True):
            assert s is not None
            assert (b.charged_credits, b.response_cost_usd) == (s.charged_credits, s.response_cost_usd)
        for account in ("a0", "a1", "a2"):
            amounts = Counter((e.amount, e.reason) for e in ledger.ledger_entries(account))
            assert all(n % 2 == 0 for n in amounts.values())  # each charge once per run


def test_awkward_values_are_stored_the_same_by_a_batch_and_by_single_commits(store: Store) -> None:
    """PostgreSQL batches travel as one JSON document: text, huge integers, long decimals and nulls must come
    back exactly as a single commit stores them."""
    awkward = {
        "provider": None,
        "model": 'q"uote\\back\nline \u00e9\u4e2d\U0001f600',
        "input_tokens": 2**62,
        "output_tokens": 0,
        "cache_read_tokens": None,
        "cost_usd": Decimal("123456789.123456789012345678"),  # 27 digits, 18 places (§26)
        "usage_raw": {'k"ey': ["\u00e9", 2**53 + 1, 1.5, None, {"nested": True}]},
    }
    facts = [fact(f"u{i}", **awkward) for i in range(3)]
    with store.open() as ledger:
        ledger.commit_usage_facts(facts, pricing=PRICING, ingress_request_id="req-\u00e9")
        for f in facts:
            ledger.commit_usage_fact(
                replace(f, run_id="run-2"), call_index=0, pricing=PRICING, ingress_request_id="req-\u00e9"
            )
        stored = ledger.receipts()
    assert len(stored) == 6
    for r in stored:
        assert (r.model, r.provider, r.input_tokens, r.output_tokens) == (awkward["model"], None, 2**62, 0)
        assert r.ingress_request_id == "req-\u00e9" and r.usage_raw == awkward["usage_raw"]
    batched, singles = stored[:3], stored[3:]
    for b, s in zip(batched, singles, strict=True):
        assert (b.charged_credits, b.response_cost_usd) == (s.charged_credits, s.response_cost_usd)
        assert b.response_cost_usd == PRICING.user_cost_usd(awkward["cost_usd"])  # every digit kept
        assert b.created_at.tzinfo is not None


@pytest.mark.slow
def test_a_killed_batch_writer_leaves_whole_batches_and_a_retry_completes_it(store: Store) -> None:
    """SIGKILL at an arbitrary moment: every batch is all there or not there at all, the balances match the
    receipts, and committing the interrupted batch again completes it exactly once."""
    size = 400
    with store.open() as ledger:  # the schema exists before the writer starts
        pass
    child = subprocess.Popen(
        [sys.executable, str(HERE / "batch_writer.py"), store.kind, store.target, str(size)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", "")},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("committed 0")
        time.sleep(0.05)  # into the middle of some later batch
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        if child.stdout is not None:
            child.stdout.close()
    with store.open() as ledger:
        per_run = Counter(r.run_id for r in ledger.receipts())
        assert set(per_run.values()) == {size}, per_run
        done = len(per_run)
        assert set(per_run) == {f"batch-{k}" for k in range(done)}
        charged = sum(r.charged_credits for r in ledger.receipts())
        assert sum(ledger.balance(f"acct-{i}") for i in range(3)) == -charged
        # The batch that was (or was about to be) under way when the writer died, committed by a retry.
        receipts = ledger.commit_usage_facts(batch(done, size), pricing=Pricing(markup=1.0))
        again = ledger.commit_usage_facts(batch(done, size), pricing=Pricing(markup=1.0))
        assert receipts == again
        assert len(ledger.receipts(run_id=f"batch-{done}")) == size
        total = sum(r.charged_credits for r in ledger.receipts())
        assert sum(ledger.balance(f"acct-{i}") for i in range(3)) == -total
        assert sum(len(ledger.ledger_entries(f"acct-{i}")) for i in range(3)) == (done + 1) * size


def test_the_delivery_commits_a_written_ahead_batch_and_one_refused_fact_parks_alone(
    store: Store, tmp_path: Path
) -> None:
    from chainwarden.billing.delivery import BillingDelivery  # noqa: PLC0415
    from chainwarden.billing.facts import Billable  # noqa: PLC0415
    from chainwarden.billing.outbox import Outbox  # noqa: PLC0415

    with store.open() as ledger:
        store.fail_inserts("charge_receipts", "usage_unit_id", "poison")
        outbox = Outbox(tmp_path / "outbox.sqlite3")
        delivery = BillingDelivery(ledger, outbox)
        try:
            good = [Billable.resolve(fact(f"g{i}"), i) for i in range(5)]
            journaled = delivery.write_ahead(good, pricing=PRICING, ingress_request_id=None)
            assert len({j.seq for j in journaled}) == 5  # one outbox transaction wrote them all
            outcomes = delivery.commit(journaled, pricing=PRICING, ingress_request_id=None)
            assert [o.receipt is not None for o in outcomes] == [True] * 5
            assert outbox.pending(ledger.identity) == []
            # Replayed: duplicates (receipt None), nothing charged twice, the rows settled.
            again = delivery.commit(
                delivery.write_ahead(good, pricing=PRICING, ingress_request_id=None),
                pricing=PRICING,
                ingress_request_id=None,
            )
            assert [o.receipt for o in again] == [None] * 5
            # The store refuses one fact: the batch is rolled back and the facts go one by one.
            mixed = [Billable.resolve(fact(u), i) for i, u in enumerate(("m0", "poison", "m2"))]
            outcomes = delivery.commit(
                delivery.write_ahead(mixed, pricing=PRICING, ingress_request_id=None),
                pricing=PRICING,
                ingress_request_id=None,
            )
            assert [(o.receipt is not None, o.parked) for o in outcomes] == [
                (True, False),
                (False, True),
                (True, False),
            ]
            assert outbox.pending(ledger.identity) == ["run-1/0/poison"]
            assert ledger.balance("acct-1") == -7 * 200
        finally:
            delivery.close()
            outbox.close()


def test_concurrent_overlapping_batches_charge_each_fact_once(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Three writers with their own connections commit the same facts, in different orders, at once, and
    never deadlock: on PostgreSQL a batch locks its keys in one order before inserting its receipts in the
    facts' order (before, a retry in key order could still deadlock with a first attempt: a loaded CI run
    saw a writer retried twice)."""
    import logging  # noqa: PLC0415
    import random  # noqa: PLC0415
    import threading  # noqa: PLC0415

    caplog.set_level(logging.WARNING, logger="chainwarden.billing")

    facts = [fact(f"u{i}", billing_account_id=f"acct-{i % 2}") for i in range(60)]
    with store.open():
        pass  # the schema, before the writers race
    results: dict[int, list[ChargeReceipt]] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(3)

    def writer(n: int) -> None:
        order = facts[:]
        random.Random(n).shuffle(order)
        try:
            with store.open() as ledger:
                start.wait(timeout=5)
                results[n] = ledger.commit_usage_facts(order, pricing=PRICING)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    by_key = [{r.source_reference: r for r in results[n]} for n in range(3)]
    assert by_key[0] == by_key[1] == by_key[2]  # every writer got the one committed receipt of each key
    with store.open() as ledger:
        assert len(ledger.receipts()) == 60
        assert ledger.balance("acct-0") == ledger.balance("acct-1") == -30 * 200
        assert len(ledger.ledger_entries("acct-0")) == 30
    retries = [r.getMessage() for r in caplog.records if "retrying" in r.getMessage()]
    assert not retries, retries
