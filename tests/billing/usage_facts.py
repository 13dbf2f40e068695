"""The usage fact billing tests start from: one LLM call of run-1 on acct-1, overridable field by field."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from chainwarden.billing import UsageFact


def fact(unit: str | None = "call-1", **overrides: Any) -> UsageFact:
    fields: dict[str, Any] = {
        "run_id": "run-1",
        "attempt": 0,
        "source": "litellm",
        "billing_account_id": "acct-1",
        "virtual_key_id": "vk-1",
        "usage_unit_id": unit,
        "provider": "openai",
        "model": "gpt-x",
        "input_tokens": 100,
        "output_tokens": 20,
        "cost_usd": Decimal("0.00001"),
    }
    fields.update(overrides)
    return UsageFact(**fields)
