"""docs/design.md §26: the billing limits are checked when a UsageFact is built, identically for every store.

Each limit is tried at limit-1, limit and limit+1; what is accepted round-trips through both stores (the
`store` fixture runs every store test on SQLite and on PostgreSQL with the same code).
"""

from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest
from stores import Store

from chainwarden.billing import METRICS, ChargeReceipt, Ledger, Pricing, UsageFact

BASE: dict[str, Any] = {
    "run_id": "run-1",
    "attempt": 0,
    "source": "litellm",
    "billing_account_id": "acct-1",
    "virtual_key_id": "vk-1",
    "usage_unit_id": "u-1",
}
TEXT_FIELDS = (
    "run_id",
    "source",
    "billing_account_id",
    "virtual_key_id",
    "usage_unit_id",
    "provider",
    "model",
)
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
ONE = Pricing(markup=1.0)


def fact(**overrides: Any) -> UsageFact:
    return UsageFact(**{**BASE, **overrides})


# (overrides, accepted?) at limit-1, limit and limit+1 for every §26 limit.
BOUNDARIES: list[tuple[dict[str, Any], bool]] = [
    *[
        ({name: ch * n}, n <= 512)
        for name in TEXT_FIELDS
        for n in (511, 512, 513)
        for ch in ("a", "é", "\U0001f600")
    ],
    ({"attempt": 2**31 - 1}, True),
    ({"attempt": 2**31}, False),
    ({"attempt": 2**31 + 1}, False),
    *[({name: value}, value < 2**63) for name in TOKEN_FIELDS for value in (2**63 - 1, 2**63, 2**63 + 1)],
    ({"cost_usd": Decimal(10**12 - 1)}, True),
    ({"cost_usd": Decimal(10**12)}, False),
    ({"cost_usd": Decimal(10**12 + 1)}, False),
    ({"cost_usd": Decimal("999999999999.999999999999999999")}, True),
    ({"cost_usd": Decimal("0." + "1" * 17)}, True),
    ({"cost_usd": Decimal("0." + "1" * 18)}, True),
    ({"cost_usd": Decimal("0." + "1" * 19)}, False),
    # Trailing zeros are not decimal places of the value.
    ({"cost_usd": Decimal("1." + "0" * 30)}, True),
    ({"cost_usd": 1e-18}, True),
    ({"cost_usd": 1e-19}, False),
    ({"cost_usd": 1e12}, False),
]


def _id(case: tuple[dict[str, Any], bool]) -> str:
    ((name, value),) = case[0].items()
    shown = f"len{len(value)}-{ord(value[0]):x}" if isinstance(value, str) else str(value)[:24]
    return f"{name}={shown}-{'ok' if case[1] else 'refused'}"


@pytest.mark.parametrize("case", BOUNDARIES, ids=[_id(c) for c in BOUNDARIES])
def test_each_limit_at_its_boundary(case: tuple[dict[str, Any], bool]) -> None:
    overrides, accepted = case
    if accepted:
        fact(**overrides)
        return
    (name,) = overrides
    with pytest.raises(ValueError, match=name):
        fact(**overrides)


@pytest.mark.parametrize(
    ("overrides", "error", "names"),
    [
        *[({name: "a\x00b"}, ValueError, name) for name in TEXT_FIELDS],
        *[({name: "a\ud800b"}, ValueError, name) for name in TEXT_FIELDS],
        *[({name: ""}, ValueError, name) for name in TEXT_FIELDS],
        *[({name: 7}, TypeError, name) for name in TEXT_FIELDS],
        *[({name: -1}, ValueError, name) for name in TOKEN_FIELDS],
        *[({name: True}, TypeError, name) for name in TOKEN_FIELDS],
        *[({name: 1.0}, TypeError, name) for name in TOKEN_FIELDS],
        ({"attempt": -1}, ValueError, "attempt"),
        ({"attempt": False}, TypeError, "attempt"),
        ({"cost_usd": -1e-18}, ValueError, "cost_usd"),
        ({"cost_usd": float("nan")}, ValueError, "cost_usd"),
        ({"cost_usd": Decimal("-Infinity")}, ValueError, "cost_usd"),
        ({"cost_usd": Decimal("sNaN")}, ValueError, "cost_usd"),
        ({"cost_usd": True}, TypeError, "cost_usd"),
        ({"usage_raw": {1: "x"}}, TypeError, "usage_raw"),
        ({"usage_raw": {"a": (1, 2)}}, TypeError, "usage_raw"),
        ({"usage_raw": {"a": {1, 2}}}, TypeError, "usage_raw"),
        ({"usage_raw": {"a": Decimal("1")}}, TypeError, "usage_raw"),
        ({"usage_raw": {"a": [float("inf")]}}, ValueError, "usage_raw"),
        ({"usage_raw": {"a\ud800": 1}}, ValueError, "usage_raw"),
        ({"usage_raw": [1]}, TypeError, "usage_raw"),
    ],
)
def test_bad_fields_name_themselves(overrides: dict[str, Any], error: type[Exception], names: str) -> None:
    with pytest.raises(error, match=names):
        fact(**overrides)


def test_usage_raw_nesting_is_bounded_without_recursion_errors() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(10_000):
        node["k"] = {}
        node = node["k"]
    with pytest.raises(ValueError, match="nested deeper"):
        fact(usage_raw=deep)


def test_usage_raw_is_taken_at_construction() -> None:
    raw: dict[str, Any] = {"id": "chatcmpl-1", "usage": {"prompt_tokens": 3}}
    f = fact(usage_raw=raw)
    raw["usage"]["prompt_tokens"] = 999
    assert f.usage_raw_json == '{"id":"chatcmpl-1","usage":{"prompt_tokens":3}}'


def _roundtrip(ledger: Ledger, f: UsageFact) -> tuple[ChargeReceipt, ChargeReceipt]:
    receipt = ledger.commit_usage_fact(f, call_index=0, pricing=ONE)
    assert receipt is not None
    [stored] = ledger.receipts(run_id=f.run_id)
    return receipt, stored


ACCEPTED = [c for c in BOUNDARIES if c[1] and "cost_usd" not in c[0]]


@pytest.mark.parametrize("case", ACCEPTED, ids=[_id(c) for c in ACCEPTED])
def test_every_store_stores_the_largest_accepted_values(ledger: Ledger, case: tuple[dict, bool]) -> None:
    f = fact(**case[0])
    receipt, stored = _roundtrip(ledger, f)
    assert stored == receipt
    assert (stored.run_id, stored.attempt, stored.billing_account_id, stored.provider, stored.model) == (
        f.run_id,
        f.attempt,
        f.billing_account_id,
        f.provider,
        f.model,
    )
    assert (stored.input_tokens, stored.output_tokens) == (f.input_tokens, f.output_tokens)
    assert ledger.commit_usage_fact(f, call_index=0, pricing=ONE) is None


@pytest.mark.parametrize(
    "cost", [Decimal("0." + "1" * 18), Decimal("9" * 11 + ".99"), Decimal("922337203685.4775807")]
)
def test_costs_round_trip_exactly(ledger: Ledger, cost: Decimal) -> None:
    receipt, stored = _roundtrip(ledger, fact(cost_usd=cost))
    assert stored == receipt
    assert stored.response_cost_usd == cost
    assert ledger.balance("acct-1") == -ONE.credits_for(cost)


def test_a_charge_beyond_64_bit_credits_is_refused_alike(ledger: Ledger) -> None:
    # §26 admits costs below 10**12 USD, but a ledger column holds at most 2**63-1 credits
    # (about 922 billion USD at markup 1): such a fact cannot be committed, on any store, and nothing changes.
    with pytest.raises(ValueError, match="more credits than a ledger can hold"):
        ledger.commit_usage_fact(fact(cost_usd=Decimal(10**12 - 1)), call_index=0, pricing=ONE)
    assert ledger.receipts() == []


def test_a_balance_that_would_leave_64_bits_is_refused_alike(ledger: Ledger) -> None:
    ledger.create_account("acct-1", balance_credits=-(2**63 - 1) + 10)
    before = (ledger.balance("acct-1"), ledger.ledger_entries("acct-1"))
    with pytest.raises(ValueError, match="64-bit range"):
        ledger.commit_usage_fact(fact(cost_usd=Decimal("0.0000011")), call_index=0, pricing=ONE)
    assert (ledger.balance("acct-1"), ledger.ledger_entries("acct-1")) == before
    assert ledger.receipts() == []
    assert ledger.commit_usage_fact(fact(cost_usd=Decimal("0.000001")), call_index=0, pricing=ONE)
    assert ledger.balance("acct-1") == -(2**63 - 1)


def test_usage_raw_is_stored_as_json_and_returned(ledger: Ledger) -> None:
    raw = {
        "id": "msg_01",
        "usage": {"input_tokens": 12, "cache": [None, True, 2.5, 2**70]},
        "note": "nul\x00 and ünïcode \U0001f600",
    }
    receipt, stored = _roundtrip(ledger, fact(usage_raw=raw))
    assert receipt.usage_raw == stored.usage_raw == raw
    _, no_raw = _roundtrip(ledger, fact(run_id="run-2"))
    assert no_raw.usage_raw is None


def test_an_unknown_account_is_created_logged_and_counted(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    before = METRICS.get("billing.unknown_account_created")
    with store.open() as ledger, caplog.at_level(logging.WARNING, logger="chainwarden.billing"):
        ledger.create_account("acct-known")
        assert ledger.commit_usage_fact(fact(billing_account_id="acct-known"), call_index=0, pricing=ONE)
        assert "unknown_account_created" not in caplog.text
        assert ledger.commit_usage_fact(
            fact(billing_account_id="acct-new", usage_unit_id="u-2"), call_index=0, pricing=ONE
        )
        assert ledger.balance("acct-new") == 0
    assert METRICS.get("billing.unknown_account_created") == before + 1
    assert "billing.unknown_account_created billing_account_id=acct-new" in caplog.text


def test_the_fallback_id_of_a_long_run_id_is_billable(ledger: Ledger) -> None:
    run_id = "r" * 512
    receipt = ledger.commit_usage_fact(fact(run_id=run_id, usage_unit_id=None), call_index=7, pricing=ONE)
    assert receipt is not None
    assert receipt.source_reference == f"{run_id}/0/MISSING:{run_id}/7"
    with pytest.raises(ValueError, match="usage_unit_id"):
        fact(run_id=run_id, usage_unit_id=f"MISSING:{run_id}x/7")
