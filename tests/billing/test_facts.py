from __future__ import annotations

import logging
from decimal import Decimal
from typing import Any

import pytest

from chainwarden.billing import METRICS, UsageFact, compute_idempotency_key, with_usage_unit_id

BASE: dict[str, Any] = {
    "run_id": "run-1",
    "attempt": 0,
    "source": "litellm",
    "billing_account_id": "acct-1",
    "virtual_key_id": "vk-1",
}


def test_key_is_run_attempt_unit() -> None:
    f = UsageFact(**BASE, usage_unit_id="call-abc123")
    assert compute_idempotency_key(f) == "run-1/0/call-abc123"


def test_key_needs_a_unit_id() -> None:
    with pytest.raises(ValueError, match="usage_unit_id"):
        compute_idempotency_key(UsageFact(**BASE))
    with pytest.raises(TypeError):
        compute_idempotency_key("run-1/0/x")  # type: ignore[arg-type]


def test_missing_unit_id_fallback_is_deterministic_logged_and_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    before = METRICS.get("billing.missing_usage_unit_id")
    with caplog.at_level(logging.ERROR, logger="chainwarden.billing"):
        a = with_usage_unit_id(UsageFact(**BASE), 7)
        b = with_usage_unit_id(UsageFact(**BASE), 7)
    assert a == b
    assert a.usage_unit_id == "MISSING:run-1/7"
    assert compute_idempotency_key(a) == "run-1/0/MISSING:run-1/7"
    assert METRICS.get("billing.missing_usage_unit_id") == before + 2
    assert caplog.text.count("billing.missing_usage_unit_id") == 2


def test_an_existing_unit_id_is_kept_and_not_counted() -> None:
    before = METRICS.get("billing.missing_usage_unit_id")
    f = UsageFact(**BASE, usage_unit_id="msg_1")
    assert with_usage_unit_id(f, 3) is f
    assert METRICS.get("billing.missing_usage_unit_id") == before


@pytest.mark.parametrize("call_index", [-1])
def test_negative_call_index(call_index: int) -> None:
    with pytest.raises(ValueError):
        with_usage_unit_id(UsageFact(**BASE), call_index)


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"run_id": ""}, ValueError),
        ({"run_id": 5}, TypeError),
        ({"source": None}, TypeError),
        ({"billing_account_id": ""}, ValueError),
        ({"attempt": -1}, ValueError),
        ({"attempt": True}, TypeError),
        ({"attempt": 1.0}, TypeError),
        ({"usage_unit_id": ""}, ValueError),
        ({"input_tokens": -1}, ValueError),
        ({"output_tokens": 1.5}, TypeError),
        ({"cache_read_tokens": True}, TypeError),
        ({"cache_write_tokens": -3}, ValueError),
        ({"cost_usd": -0.5}, ValueError),
        ({"cost_usd": float("nan")}, ValueError),
        ({"cost_usd": float("inf")}, ValueError),
        ({"cost_usd": Decimal("NaN")}, ValueError),
        ({"cost_usd": "0.1"}, TypeError),
        ({"model": 3}, TypeError),
        ({"usage_raw": [("a", 1)]}, TypeError),
    ],
)
def test_bad_facts_are_rejected(overrides: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        UsageFact(**{**BASE, **overrides})


def test_cost_decimal_is_exact() -> None:
    assert UsageFact(**BASE, cost_usd=0.1).cost_decimal == Decimal("0.1")
    assert UsageFact(**BASE).cost_decimal is None
