"""A fact is resolved for billing once (`Billable.resolve`: its usage_unit_id and its key) and carried as it
is from the write-ahead through the outbox and delivery to the ledger (docs/billing.md "The outbox")."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import pytest

from chainwarden.billing import Pricing, SqliteLedger, UsageFact
from chainwarden.billing import facts as facts_module
from chainwarden.billing.delivery import BillingDelivery
from chainwarden.billing.facts import Billable
from chainwarden.billing.outbox import Outbox

PRICING = Pricing(markup=1.0)


def fact(unit: str | None) -> UsageFact:
    return UsageFact(
        run_id="run-b",
        attempt=0,
        source="litellm",
        billing_account_id="acct",
        virtual_key_id="vk",
        usage_unit_id=unit,
        cost_usd=Decimal("0.001"),
    )


@pytest.fixture
def resolutions(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every key computed in the billing package (they are all computed through `facts`)."""
    computed: list[str] = []
    compute = facts_module.compute_idempotency_key

    def counted(f: UsageFact) -> str:
        key = compute(f)
        computed.append(key)
        return key

    monkeypatch.setattr(facts_module, "compute_idempotency_key", counted)
    yield computed


def test_resolve_assigns_the_missing_id_and_the_key() -> None:
    b = Billable.resolve(fact(None), 7)
    assert b.fact.usage_unit_id == "MISSING:run-b/7"
    assert (b.call_index, b.key) == (7, "run-b/0/MISSING:run-b/7")
    assert Billable.resolve(fact("u1"), 7).key == "run-b/0/u1"
    with pytest.raises(ValueError, match="call_index"):
        Billable.resolve(fact(None), -1)


@pytest.fixture
def delivery(tmp_path: Path) -> Iterator[BillingDelivery]:
    with SqliteLedger(tmp_path / "l.sqlite3") as ledger:
        outbox = Outbox(tmp_path / "o.sqlite3")
        delivery = BillingDelivery(ledger, outbox)
        yield delivery
        delivery.close()
        outbox.close()


def test_written_ahead_facts_are_resolved_once_on_their_way_to_the_ledger(
    delivery: BillingDelivery, resolutions: list[str]
) -> None:
    billables = [Billable.resolve(fact(u), i) for i, u in enumerate(("u0", None, "u2"))]
    journaled = delivery.write_ahead(billables, pricing=PRICING, ingress_request_id=None)
    outcomes = delivery.commit(journaled, pricing=PRICING, ingress_request_id=None)
    assert [o.receipt is not None for o in outcomes] == [True, True, True]
    keys = ["run-b/0/u0", "run-b/0/MISSING:run-b/1", "run-b/0/u2"]
    assert [o.key for o in outcomes] == keys
    assert [r.source_reference for r in delivery.ledger.receipts()] == keys
    assert resolutions == keys  # once each: the outbox, the batch commit and the ledger reuse it


def test_a_parked_fact_is_drained_with_the_key_it_was_parked_under(
    delivery: BillingDelivery, resolutions: list[str]
) -> None:
    ledger, outbox = delivery.ledger, delivery.outbox
    billable = Billable.resolve(fact(None), 4)
    outbox.put(ledger.identity, billable, pricing=PRICING, ingress_request_id=None, error="x")
    [entry] = outbox.due(ledger.identity)
    assert entry.billable == billable
    assert delivery.drain_once() == (1, False)
    assert [r.source_reference for r in ledger.receipts()] == [billable.key]
    assert resolutions == [billable.key]  # resolved once, before it was parked


def test_the_public_commit_resolves_as_the_delivery_does(tmp_path: Path) -> None:
    with SqliteLedger(tmp_path / "l.sqlite3") as ledger:
        receipt = ledger.commit_usage_fact(fact(None), call_index=3, pricing=PRICING)
        assert receipt is not None
        assert receipt.source_reference == Billable.resolve(fact(None), 3).key
        again = ledger.commit_usage_facts(
            [replace(fact(None), cost_usd=Decimal(0))], call_indexes=[3], pricing=PRICING
        )
        assert again == [receipt]  # the same key: a duplicate, the original receipt back
