"""The durable outbox: a fact whose commit failed is kept, keyed by its idempotency key, and committed exactly
once when the ledger is back — by this process's drainer, or by a later process after a SIGKILL."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from runtime_helpers import ScriptedExecutor, request, usage_fact
from sqlite_locks import write_locked

from chainwarden.billing import (
    BillingUnsettled,
    LedgerUnavailable,
    Pricing,
    SqliteLedger,
    UsageFact,
)
from chainwarden.billing.facts import Billable
from chainwarden.billing.outbox import Outbox, decode_fact, encode_fact
from chainwarden.runtime import AiRuntime, Done, UsageReport

CHILD = Path(__file__).with_name("outbox_child.py")
PRICING = Pricing(markup=2.0)


def scripted(*events: object) -> ScriptedExecutor:
    async def script(req: object):  # type: ignore[no-untyped-def]
        for event in events:
            yield event

    return ScriptedExecutor(script)


def test_a_fact_survives_the_outbox_exactly() -> None:
    fact = UsageFact(
        run_id="r",
        attempt=3,
        source="s",
        billing_account_id="a",
        virtual_key_id="v",
        usage_unit_id="u",
        provider="p",
        model="m",
        input_tokens=2**63 - 1,
        output_tokens=0,
        cost_usd=0.1,
        usage_raw={"x": [1, 2.5, None, "\x00"]},
    )
    back = decode_fact(encode_fact(fact))
    assert back.cost_decimal == Decimal("0.1")
    assert back.usage_raw_json == fact.usage_raw_json
    assert (back.run_id, back.attempt, back.input_tokens, back.model) == ("r", 3, 2**63 - 1, "m")
    # Every field the fact is made from is stored: the outbox keeps no list of its own.
    made_of = {f.name for f in dataclasses.fields(UsageFact) if f.init}
    assert set(json.loads(encode_fact(fact))) == made_of
    full = dataclasses.replace(fact, cache_read_tokens=5, cache_write_tokens=6, cost_usd=Decimal("0.1"))
    assert all(getattr(full, name) is not None for name in made_of)
    assert decode_fact(encode_fact(full)) == full


def test_the_outbox_is_keyed_by_ledger_and_idempotency_key(tmp_path: Path) -> None:
    outbox = Outbox(tmp_path / "o.sqlite3")
    fact = usage_fact("run-k", "u1")
    put = {"pricing": PRICING, "ingress_request_id": None, "error": "x"}
    billable = Billable.resolve(fact, 0)
    assert outbox.put("ledger-a", billable, **put) is True  # type: ignore[arg-type]
    assert outbox.put("ledger-a", billable, **put) is False  # type: ignore[arg-type]
    assert outbox.put("ledger-b", billable, **put) is True  # type: ignore[arg-type]
    assert outbox.pending("ledger-a") == ["run-k/0/u1"]
    assert [e.key for e in outbox.due("ledger-b")] == ["run-k/0/u1"]
    outbox.close()
    with pytest.raises(ValueError, match="closed"):
        outbox.pending("ledger-a")


async def test_the_default_outbox_sits_next_to_the_ledger_and_is_made_only_when_needed(
    tmp_path: Path,
) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path) as ledger, AiRuntime({"ext": scripted(Done())}, ledger) as rt:
        assert rt.outbox.path == f"{path}.outbox.sqlite3"
        async with rt.run(request(graph_id="ext:x")) as run:
            await run.billing_settled()
        assert not os.path.exists(rt.outbox.path)


async def test_a_locked_ledger_parks_facts_and_the_drainer_commits_them_once(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    facts = [UsageReport(usage_fact("run-p", f"u{i}")) for i in range(30)]
    with SqliteLedger(path, busy_timeout_s=0.2) as ledger:
        with AiRuntime({"ext": scripted(*facts, Done())}, ledger, PRICING) as rt:
            with write_locked(path) as holder:
                async with rt.run(request(graph_id="ext:x", run_id="run-p")) as run:
                    final = await run.final
                    with pytest.raises(BillingUnsettled) as unsettled:
                        await run.billing_settled(timeout=0.1)
                assert (final.ok, final.error) == (False, "internal")
                assert unsettled.value.count == 30
                assert unsettled.value.outbox == rt.outbox.path
                # The first commit (one batch: the facts written ahead together) spent the ledger's retry
                # budget, once for all of them; the facts after it went straight to the outbox.
                first = run.billing_failures[0]
                assert isinstance(first, LedgerUnavailable) and first.attempts >= 1
                spent = [f for f in run.billing_failures if f.attempts > 0]  # type: ignore[attr-defined]
                assert all(f is first for f in spent)
                assert all(isinstance(f, LedgerUnavailable) for f in run.billing_failures)
                assert len(rt.outbox.pending(ledger.identity)) == 30
                holder.execute("ROLLBACK")
            await run.billing_settled(timeout=30)
            assert rt.outbox.pending(ledger.identity) == []
        receipts = ledger.receipts(run_id="run-p")
        assert sorted(r.source_reference for r in receipts) == sorted(f"run-p/0/u{i}" for i in range(30))
        assert ledger.balance("acct-1") == -200 * 30


@pytest.mark.slow
def test_sigkill_with_a_full_outbox_then_a_new_process_drains_it_once(tmp_path: Path) -> None:
    ledger_path = tmp_path / "ledger.sqlite3"
    outbox_path = tmp_path / "outbox.sqlite3"
    count = 40
    with SqliteLedger(ledger_path) as ledger:
        ledger.create_account("acct-crash", balance_credits=0)
        identity = ledger.identity
    with write_locked(ledger_path) as holder:
        child = subprocess.Popen(
            [sys.executable, str(CHILD), "park", str(ledger_path), str(outbox_path), "run-crash", str(count)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert child.stdout is not None
            assert child.stdout.readline().split() == ["final", "False", "internal"]
            assert child.stdout.readline().split() == ["unsettled", str(count)]
            # Killed while its drainer still retries: nothing gets to clean up.
            os.kill(child.pid, signal.SIGKILL)
            assert child.wait(timeout=30) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
            for pipe in (child.stdin, child.stdout):
                if pipe is not None:
                    pipe.close()
        left = Outbox(outbox_path)
        assert len(left.pending(identity, run_id="run-crash")) == count
        left.close()
        holder.execute("ROLLBACK")
    # Two new processes start on the same outbox at once: between them every fact is committed once.
    drainers = [
        subprocess.Popen(
            [sys.executable, str(CHILD), "drain", str(ledger_path), str(outbox_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [d.communicate(timeout=60)[0] for d in drainers]
    assert [d.returncode for d in drainers] == [0, 0]
    assert [o.strip() for o in outputs] == ["drained", "drained"]
    with SqliteLedger(ledger_path) as ledger:
        receipts = ledger.receipts(run_id="run-crash")
        assert sorted(r.source_reference for r in receipts) == sorted(
            f"run-crash/0/u{i}" for i in range(count)
        )
        assert {r.usage_raw["i"] for r in receipts if r.usage_raw} == set(range(count))
        expected = -sum(PRICING.credits_for(Decimal(i % 89 + 1) * Decimal("0.0000013")) for i in range(count))
        assert ledger.balance("acct-crash") == expected
        assert len(ledger.ledger_entries("acct-crash")) == count


@pytest.mark.parametrize(
    ("timeout", "error"), [(-1, ValueError), (float("nan"), ValueError), ("1", TypeError)]
)
async def test_billing_settled_checks_its_timeout(ledger: SqliteLedger, timeout: object, error: type) -> None:
    with AiRuntime({"ext": scripted(Done())}, ledger) as rt:
        async with rt.run(request(graph_id="ext:x")) as run:
            with pytest.raises(error, match="timeout"):
                await run.billing_settled(timeout=timeout)  # type: ignore[arg-type]
            await run.billing_settled(timeout=None)


async def test_a_runtime_drains_what_an_earlier_one_left(tmp_path: Path) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path, busy_timeout_s=0.1) as ledger:
        facts = [UsageReport(usage_fact("run-e", f"u{i}")) for i in range(5)]
        first = AiRuntime({"ext": scripted(*facts, Done())}, ledger, PRICING)
        with write_locked(path):
            async with first.run(request(graph_id="ext:x", run_id="run-e")) as run:
                assert not (await run.final).ok
            first.close()  # stops its drainer while the ledger is still locked
        left = Outbox(first.outbox.path)
        assert len(left.pending(ledger.identity)) == 5
        left.close()
        with AiRuntime({}, ledger, PRICING) as second:
            assert second.outbox.path == first.outbox.path
            for _ in range(600):
                if not second.outbox.pending(ledger.identity):
                    break
                await asyncio.sleep(0.05)
            assert second.outbox.pending(ledger.identity) == []
        assert sorted(r.source_reference for r in ledger.receipts()) == [f"run-e/0/u{i}" for i in range(5)]
        assert ledger.balance("acct-1") == -200 * 5


async def test_a_fact_that_cannot_even_be_parked_fails_the_run_loudly(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "ledger.sqlite3"
    (tmp_path / "not-a-dir").write_text("x")
    facts = [UsageReport(usage_fact("run-x", f"u{i}")) for i in range(2)]
    with SqliteLedger(path, busy_timeout_s=0.1) as ledger:
        ledger.create_account("acct-1")
        outbox = tmp_path / "not-a-dir" / "outbox.sqlite3"
        with (
            AiRuntime({"ext": scripted(*facts, Done())}, ledger, PRICING, outbox=outbox) as rt,
            write_locked(path),
        ):
            async with rt.run(request(graph_id="ext:x", run_id="run-x")) as run:
                final = await run.final
                with pytest.raises(BillingUnsettled, match="NOT kept") as unsettled:
                    await run.billing_settled(timeout=30)
        assert (final.ok, final.error) == (False, "internal")
        assert len(unsettled.value.lost) == 2
        assert unsettled.value.count == 2
        assert "could be neither committed nor kept in the outbox" in caplog.text


def test_the_drainer_commits_parked_facts_together_and_one_refused_fact_alone(tmp_path: Path) -> None:
    """Parked facts of the same pricing and request go to the ledger in one transaction; a fact the ledger
    refuses (its charge does not fit a 64-bit credit column, docs/design.md §26) stays parked with its error
    while the others are committed, each exactly once."""
    from chainwarden.billing.delivery import BillingDelivery  # noqa: PLC0415

    with SqliteLedger(tmp_path / "ledger.sqlite3") as ledger:
        outbox = Outbox(tmp_path / "outbox.sqlite3")
        delivery = BillingDelivery(ledger, outbox)  # an empty outbox: no drainer thread yet
        try:
            good = [usage_fact("run-d", f"u{i}") for i in range(25)]
            huge = Pricing(markup=100_000)
            too_big = usage_fact("run-d", "too-big", cost="999999999999")
            for i, fact in enumerate(good[:10]):
                outbox.put(
                    ledger.identity,
                    Billable.resolve(fact, i),
                    pricing=PRICING,
                    ingress_request_id="r",
                    error="x",
                )
            outbox.put(
                ledger.identity,
                Billable.resolve(too_big, 99),
                pricing=huge,
                ingress_request_id="r",
                error="x",
            )
            outbox.put(
                ledger.identity,
                Billable.resolve(good[10], 10),
                pricing=huge,
                ingress_request_id="r",
                error="x",
            )
            for i, fact in enumerate(good[11:], start=11):
                outbox.put(
                    ledger.identity,
                    Billable.resolve(fact, i),
                    pricing=PRICING,
                    ingress_request_id=None,
                    error="x",
                )
            singles: list[str] = []
            commit_one = ledger._commit_usage_fact

            def counted(billable: Billable, **kwargs: Any) -> Any:
                singles.append(billable.fact.usage_unit_id or "")
                return commit_one(billable, **kwargs)

            ledger._commit_usage_fact = counted  # type: ignore[method-assign]
            assert delivery.drain_once() == (25, False)
            # Two groups of 10 and 14 went in one transaction each; only the refused group went one by one.
            assert sorted(singles) == ["too-big", "u10"]
            assert outbox.pending(ledger.identity) == ["run-d/0/too-big"]
            [left] = outbox.due(ledger.identity, now=float("inf"))
            assert left.attempts == 1 and "more credits than a ledger can hold" in (left.last_error or "")
            receipts = ledger.receipts(run_id="run-d")
            assert sorted(r.source_reference for r in receipts) == sorted(f"run-d/0/u{i}" for i in range(25))
            assert {r.ingress_request_id for r in receipts} == {"r", None}
            # Draining again commits nothing twice.
            assert delivery.drain_once() == (0, False)
            assert len(ledger.receipts(run_id="run-d")) == 25
        finally:
            delivery.close()
            outbox.close()
