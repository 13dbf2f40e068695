"""The usage fact an executor reports for one billable unit of work, and its idempotency key."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from chainwarden.billing.metrics import METRICS

logger = logging.getLogger("chainwarden.billing")

_TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
_REQUIRED_TEXT = ("run_id", "source", "billing_account_id", "virtual_key_id")


def _check_text(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")


def _check_count(name: str, value: object) -> None:
    if value is None:
        return
    # bool is an int subclass; True tokens is a caller bug, not a count.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")


def check_cost_usd(value: object, name: str = "cost_usd") -> Decimal:
    """Validates a USD amount and returns it as an exact Decimal.

    Floats go through ``str`` so that 0.00001 means the decimal 0.00001 a human wrote, not the binary
    approximation (decisions §16).
    """
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise TypeError(f"{name} must be a float, int or Decimal, got {type(value).__name__}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value!r}")
    amount = Decimal(str(value)) if isinstance(value, float) else Decimal(value)
    if not amount.is_finite():
        raise ValueError(f"{name} must be finite, got {value!r}")
    if amount < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return amount


@dataclass(frozen=True)
class UsageFact:
    """One billable unit (usually one LLM call) of one run attempt; validated on construction."""

    run_id: str
    attempt: int
    source: str
    billing_account_id: str
    virtual_key_id: str
    usage_unit_id: str | None = None
    provider: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | Decimal | None = None
    usage_raw: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        for name in _REQUIRED_TEXT:
            _check_text(name, getattr(self, name))
        _check_text("usage_unit_id", self.usage_unit_id, optional=True)
        for name in ("provider", "model"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"{name} must be a str or None, got {type(value).__name__}")
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int):
            raise TypeError(f"attempt must be an int, got {type(self.attempt).__name__}")
        if self.attempt < 0:
            raise ValueError(f"attempt must not be negative, got {self.attempt}")
        for name in _TOKEN_FIELDS:
            _check_count(name, getattr(self, name))
        if self.cost_usd is not None:
            check_cost_usd(self.cost_usd)
        if self.usage_raw is not None and not isinstance(self.usage_raw, Mapping):
            raise TypeError(f"usage_raw must be a mapping or None, got {type(self.usage_raw).__name__}")

    @property
    def cost_decimal(self) -> Decimal | None:
        """The cost as the exact Decimal billing uses, or None when the adapter did not report one."""
        return None if self.cost_usd is None else check_cost_usd(self.cost_usd)


def compute_idempotency_key(fact: UsageFact) -> str:
    """`{run_id}/{attempt}/{usage_unit_id}`: the charge's `source_reference`.

    The fact must already carry its usage_unit_id; `with_usage_unit_id` assigns the fallback.
    """
    if not isinstance(fact, UsageFact):
        raise TypeError(f"expected a UsageFact, got {type(fact).__name__}")
    if fact.usage_unit_id is None:
        raise ValueError(
            "fact has no usage_unit_id; resolve it with with_usage_unit_id(fact, call_index) first"
        )
    return f"{fact.run_id}/{fact.attempt}/{fact.usage_unit_id}"


def missing_usage_unit_id(run_id: str, call_index: int) -> str:
    return f"MISSING:{run_id}/{call_index}"


def with_usage_unit_id(fact: UsageFact, call_index: int) -> UsageFact:
    """Returns the fact with a usage_unit_id, assigning `MISSING:{run_id}/{call_index}` when it has none.

    A missing id is an adapter bug: it is logged as an error and counted, but billed deterministically so a
    replay of the same run (same call order) never bills twice (decisions §17).
    """
    if not isinstance(fact, UsageFact):
        raise TypeError(f"expected a UsageFact, got {type(fact).__name__}")
    if isinstance(call_index, bool) or not isinstance(call_index, int):
        raise TypeError(f"call_index must be an int, got {type(call_index).__name__}")
    if call_index < 0:
        raise ValueError(f"call_index must not be negative, got {call_index}")
    if fact.usage_unit_id is not None:
        return fact
    METRICS.increment("billing.missing_usage_unit_id")
    logger.error(
        "billing.missing_usage_unit_id run_id=%s attempt=%s model=%s call_index=%s",
        fact.run_id,
        fact.attempt,
        fact.model,
        call_index,
    )
    return replace(fact, usage_unit_id=missing_usage_unit_id(fact.run_id, call_index))
