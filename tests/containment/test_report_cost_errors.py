"""`report_cost` leaves the rules to the core (docs/design.md §28): a negative, NaN or infinite cost and a
negative token count are refused by the core's typed error, which names the argument and carries its code,
and nothing is recorded."""

from __future__ import annotations

import math
from decimal import Decimal
from typing import Any

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext, report_cost
from chainwarden.errors import InvalidArgument, InvalidArgumentType


@pytest.mark.parametrize(
    ("kwargs", "argument", "message"),
    [
        ({"cost_usd": -1.0}, "cost_usd", "cost_usd must be a finite number >= 0; got -1"),
        ({"cost_usd": math.nan}, "cost_usd", "cost_usd must be a finite number >= 0; got NaN"),
        ({"cost_usd": math.inf}, "cost_usd", "cost_usd must be a finite number >= 0; got inf"),
        ({"cost_usd": Decimal("-0.5")}, "cost_usd", "cost_usd must be a finite number >= 0; got -0.5"),
        ({"cost_usd": 0.1, "tokens_in": -1}, "tokens_in", "tokens_in must be >= 0; got -1"),
        ({"cost_usd": 0.1, "tokens_out": -7}, "tokens_out", "tokens_out must be >= 0; got -7"),
    ],
)
def test_the_cores_error_reaches_the_caller(kwargs: dict[str, Any], argument: str, message: str) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=10, max_steps=10, max_retries_total=1))
    caught: list[InvalidArgument] = []

    def call() -> None:
        with pytest.raises(InvalidArgument) as err:
            report_cost(**kwargs)
        caught.append(err.value)
        report_cost(0.25)  # the refused report left nothing behind: this one is the call's cost

    ctx.wrap_llm_call(call)
    (err,) = caught
    assert err.code == "recorder.invalid_number"  # decided by the core, not re-checked in Python
    assert err.argument == argument and str(err) == message
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"cost_usd": True}, InvalidArgumentType),
        ({"cost_usd": "1"}, InvalidArgumentType),
        ({"cost_usd": 0.1, "tokens_in": 1.5}, InvalidArgumentType),
        ({"cost_usd": 0.1, "tokens_in": 2**63}, InvalidArgument),  # more than the binding's 64 bits carry
    ],
)
def test_what_the_binding_cannot_carry_is_refused_by_name(
    kwargs: dict[str, Any], error: type[Exception]
) -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=10, max_steps=10, max_retries_total=1))
    caught: list[Exception] = []

    def call() -> None:
        with pytest.raises(error) as err:
            report_cost(**kwargs)
        caught.append(err.value)

    ctx.wrap_llm_call(call)
    assert len(caught) == 1 and getattr(caught[0], "argument", None) in {"cost_usd", "tokens_in"}
