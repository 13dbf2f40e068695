"""docs/design.md §30: a call that reported a cost and then failed is charged that cost.

The provider was paid whatever happened next, so the chain's ceiling, its parent, the shared budget and
the records all count it — a caller retrying a call that reports and then fails cannot spend without
bound under a ceiling (today's overshoot bound of docs/design.md §20 holds for failures too).
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from chainwarden.containment import (
    CallRefused,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
    report_cost,
)
from chainwarden.shield import Decision, ShieldPipeline


def ctx_with(max_cost_usd: float, **kw: Any) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=100, max_retries_total=10), **kw
    )


def reports_then_fails(cost: float) -> Any:
    def call() -> None:
        report_cost(cost, tokens_in=1_000, tokens_out=10)
        raise ConnectionError("reset after the reply was paid for")

    return call


def test_a_caller_retrying_a_paid_failure_is_stopped_by_the_ceiling() -> None:
    """The campaign's case: $3 a try under a $1 ceiling was retried three times ($9, $0 recorded)."""
    ctx = ctx_with(1.0)
    attempts = 0
    decision = Decision.RETRY
    while decision is Decision.RETRY and attempts < 10:
        attempts += 1
        decision = ctx.wrap_llm_call(reports_then_fails(3.0), WrapOptions("answer", 0.1))
    assert attempts == 2, "the second attempt is refused before it runs"
    assert decision is Decision.HALT
    assert ctx.last_stop_reason == "budget_exceeded"
    snap = ctx.get_snapshot()
    assert snap.cost_usd_accumulated == 3.0
    assert snap.step_count == 0, "a failure is not a step"
    failed, refused = snap.nodes
    assert (failed.status, failed.cost_usd, failed.retries_used) == ("error", 3.0, 1)
    assert (refused.status, refused.cost_usd) == ("halted", 0.0)
    graph = ctx.get_graph_snapshot()
    node = graph["nodes"][failed.node_id]
    assert (node["status"], node["cost_usd"], node["tokens_in"], node["tokens_out"]) == (
        "fail",
        3.0,
        1000,
        10,
    )


def test_every_way_a_call_can_end_badly_keeps_its_charge() -> None:
    # Halted by the pipeline after running, in a with block, and as a decorated function.
    class HaltOnError:
        def on_error(self, ctx: Any, error: BaseException) -> Decision:
            return Decision.HALT

    ctx = ctx_with(10.0, pipeline=ShieldPipeline(retry=HaltOnError()))  # type: ignore[arg-type]
    assert ctx.wrap_tool_call(reports_then_fails(0.5)) is Decision.HALT
    assert ctx.last_stop_reason == "pipeline_halt"
    ctx2 = ctx_with(10.0)
    with pytest.raises(ConnectionError), ctx2.llm_call(name="block"):
        report_cost(0.25)
        raise ConnectionError("cut")

    @ctx2.llm_call(name="decorated")
    def decorated() -> None:
        report_cost(0.125)
        raise TimeoutError("slow")

    with pytest.raises(TimeoutError):
        decorated()
    assert ctx.get_snapshot().cost_usd_accumulated == 0.5
    snap = ctx2.get_snapshot()
    assert snap.cost_usd_accumulated == 0.375
    assert [n.cost_usd for n in snap.nodes] == [0.25, 0.125]


async def test_async_failures_and_timeouts_keep_their_charge() -> None:
    ctx = ctx_with(10.0)

    async def fails() -> None:
        report_cost(0.75)
        raise ConnectionError("reset")

    async def hangs() -> None:
        report_cost(0.5)
        await asyncio.sleep(10)

    assert await ctx.wrap_llm_call_async(fails) is Decision.RETRY
    assert await ctx.wrap_llm_call_async(hangs, WrapOptions("slow", timeout_ms=20)) is Decision.HALT
    snap = ctx.get_snapshot()
    assert snap.cost_usd_accumulated == 1.25
    assert [(n.status, n.cost_usd) for n in snap.nodes] == [("error", 0.75), ("timeout", 0.5)]


def test_a_childs_paid_failure_counts_in_its_parent() -> None:
    parent = ctx_with(1.0)
    child = parent.spawn_child(max_cost_usd=5.0)
    assert child.wrap_llm_call(reports_then_fails(2.0)) is Decision.RETRY
    assert parent.get_snapshot().cost_usd_accumulated == 2.0
    with pytest.raises(CallRefused) as refused, parent.llm_call(name="next"):
        pass
    assert refused.value.stop_reason == "budget_exceeded"


def test_a_failure_that_reported_nothing_is_charged_nothing() -> None:
    ctx = ctx_with(1.0)

    def fails() -> None:
        raise ConnectionError("refused before any usage")

    assert ctx.wrap_llm_call(fails, WrapOptions("x", 0.5)) is Decision.RETRY
    assert ctx.get_snapshot().cost_usd_accumulated == 0.0
    assert ctx.reserved_usd == 0.0
