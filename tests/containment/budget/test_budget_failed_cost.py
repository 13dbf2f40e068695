"""docs/design.md §30 on a shared budget: a call that reported a cost and then failed is charged it in
the backend, on both real servers."""

from __future__ import annotations

from typing import Any

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.shield.types import Decision


def test_a_paid_failure_is_charged_to_the_shared_budget(backend: Any) -> None:
    ctx = ExecutionContext(ExecutionConfig(5.0, 100, 10, budget_backend=backend))

    def call() -> None:
        report_cost(1.5)
        raise ConnectionError("cut after the reply was paid for")

    assert ctx.wrap_llm_call(call, WrapOptions("x", 0.25)) is Decision.RETRY
    assert backend.get() == pytest.approx(1.5)
    assert backend.get_reserved() == 0.0

    def unpaid() -> None:
        raise ConnectionError("refused before any usage")

    assert ctx.wrap_llm_call(unpaid, WrapOptions("y", 0.25)) is Decision.RETRY
    assert backend.get() == pytest.approx(1.5)
    assert backend.get_reserved() == 0.0
