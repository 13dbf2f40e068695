"""A commit retried after a lost connection whose first attempt DID land: same outcome, nothing billed twice.

The retry is replayed with the same commit id the first attempt wrote (what `_retrying` does after a
connection broke during COMMIT), on both real stores.
"""

from __future__ import annotations

import uuid
from decimal import Decimal

import pytest

from chainwarden.billing import Ledger, Pricing, UsageFact
from chainwarden.billing import ledger as ledger_module

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


def test_a_retry_of_a_landed_commit_returns_its_receipt_once(
    ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    same = uuid.uuid4().hex  # both calls get one commit id, as a retry of one call does
    monkeypatch.setattr(ledger_module, "_commit_id", lambda: same)
    first = ledger.commit_usage_fact(FACT, call_index=0, pricing=PRICING)
    retried = ledger.commit_usage_fact(FACT, call_index=0, pricing=PRICING)
    assert first is not None and retried is not None
    assert (retried.source_reference, retried.charged_credits) == (first.source_reference, 200)
    assert len(ledger.receipts()) == 1
    assert ledger.balance("acct-1") == -200
    assert len(ledger.ledger_entries("acct-1")) == 1
    # Another caller's commit of the same fact is still a duplicate.
    monkeypatch.undo()
    assert ledger.commit_usage_fact(FACT, call_index=0, pricing=PRICING) is None
    assert ledger.balance("acct-1") == -200
