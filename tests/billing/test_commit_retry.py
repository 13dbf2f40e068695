"""A commit retried after a lost connection whose first attempt DID land: same outcome, nothing billed twice.

The retry is replayed with the same commit id the first attempt wrote (what `_retrying` does after a
connection broke during COMMIT), on both real stores.
"""

from __future__ import annotations

import dataclasses
import uuid
from decimal import Decimal
from pathlib import Path

import pytest

from chainwarden.billing import Ledger, Pricing, SqliteLedger, UsageFact
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


def _vm_steps_of_a_duplicate(tmp_path: Path, history: int) -> int:
    """SQLite virtual-machine steps (in tens) of committing an already committed fact again, in an
    account with `history` earlier charges."""
    with SqliteLedger(tmp_path / f"steps-{history}.sqlite3") as ledger:
        facts = [dataclasses.replace(FACT, usage_unit_id=f"u-{i}") for i in range(history)]
        ledger.commit_usage_facts(facts, pricing=PRICING)
        steps = 0

        def count() -> int:
            nonlocal steps
            steps += 1
            return 0

        ledger._conn.set_progress_handler(count, 10)
        # The account's newest charge: a walk from its first entry would visit all of them.
        assert ledger.commit_usage_fact(facts[-1], call_index=0, pricing=PRICING) is None
        return steps


def test_a_duplicate_costs_the_same_whatever_the_accounts_history(tmp_path: Path) -> None:
    # A duplicate is decided by the receipt's unique key alone: before, its lookup also walked the account's
    # ledger entries from the first one (a replayed run in a busy account cost milliseconds per fact).
    small, large = _vm_steps_of_a_duplicate(tmp_path, 10), _vm_steps_of_a_duplicate(tmp_path, 3_000)
    assert small > 0 and large <= small + 2, (small, large)
