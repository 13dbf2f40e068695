"""LlmResult is checked with the ledger's limits when a client adapter builds it (docs/design.md §26)."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chainwarden.billing import UsageFact
from chainwarden.runtime.run_context import LlmResult


@pytest.mark.parametrize(
    ("fields", "error", "named"),
    [
        ({"model": "m" * 513}, ValueError, "model"),
        ({"provider": "p\x00"}, ValueError, "provider"),
        ({"usage_unit_id": ""}, ValueError, "usage_unit_id"),
        ({"input_tokens": 2**63}, ValueError, "input_tokens"),
        ({"output_tokens": True}, TypeError, "output_tokens"),
        ({"cache_read_tokens": -1}, ValueError, "cache_read_tokens"),
        ({"cost_usd": Decimal(10) ** 12}, ValueError, "cost_usd"),
        ({"cost_usd": float("nan")}, ValueError, "cost_usd"),
        ({"usage_raw": {"x": float("inf")}}, ValueError, "usage_raw"),
        ({"content": None}, TypeError, "content"),
    ],
)
def test_a_result_the_ledger_would_refuse_is_refused_when_built(
    fields: dict[str, object], error: type[Exception], named: str
) -> None:
    args: dict[str, object] = {"content": "ok", **fields}
    with pytest.raises(error, match=named):
        LlmResult(**args)  # type: ignore[arg-type]


def test_values_at_the_limits_are_accepted_by_both() -> None:
    result = LlmResult(
        content="ok",
        model="m" * 512,
        input_tokens=2**63 - 1,
        cost_usd=Decimal("999999999999.999999999999999999"),
        usage_raw={"id": "msg_1"},
    )
    fact = UsageFact(
        run_id="r",
        attempt=0,
        source="inproc",
        billing_account_id="acct",
        virtual_key_id="vk",
        model=result.model,
        input_tokens=result.input_tokens,
        cost_usd=result.cost_usd,
        usage_raw=result.usage_raw,
    )
    assert fact.model == result.model
