"""docs/design.md §20: estimates are reserved, calls are settled at their actual cost
(`report_cost`, then `cost_of`, then the estimate)."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import threading
from decimal import Decimal
from typing import Any

import pytest

from chainwarden.containment import (
    CallRefused,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
    report_cost,
)
from chainwarden.shield import Decision


def ctx_with(max_cost_usd: float, **kw: Any) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=100, max_retries_total=10), **kw
    )


def counters(ctx: ExecutionContext) -> tuple[int, float, int, int]:
    snap = ctx.get_snapshot()
    return snap.step_count, snap.cost_usd_accumulated, snap.retries_used, len(snap.nodes)


def test_a_reported_dollar_stops_a_half_dollar_chain_after_one_call() -> None:
    ctx = ctx_with(0.5)
    calls = 0

    def provider() -> None:
        nonlocal calls
        calls += 1
        report_cost(1.00, tokens_in=12, tokens_out=34)

    decisions = [ctx.wrap_llm_call(provider) for _ in range(5)]
    assert decisions == [Decision.ALLOW] + [Decision.HALT] * 4
    assert calls == 1
    snap = ctx.get_snapshot()
    assert snap.cost_usd_accumulated == 1.0
    assert snap.nodes[0].cost_usd == 1.0
    assert ctx.last_stop_reason == "budget_exceeded"
    assert [e.event_type for e in snap.events if e.hook == "ExecutionContext"] == ["budget_exceeded"]
    assert snap.graph_summary is not None
    assert snap.graph_summary["total_tokens_out"] == 34
    assert ctx.reserved_usd == 0.0


def test_the_actual_cost_replaces_the_estimate_either_way() -> None:
    ctx = ctx_with(10.0)
    ctx.wrap_llm_call(lambda: report_cost(0.01), WrapOptions("cheap", cost_estimate_hint=0.5))
    ctx.wrap_tool_call(lambda: report_cost(Decimal("0.25")), WrapOptions("tool", cost_estimate_hint=0.0))
    ctx.wrap_llm_call(lambda: None, WrapOptions("estimated", cost_estimate_hint=0.125))

    def twice() -> None:
        report_cost(0.5)
        report_cost(0.25, tokens_out=1)

    ctx.wrap_llm_call(twice)
    assert [n.cost_usd for n in ctx.get_snapshot().nodes] == [0.01, 0.25, 0.125, 0.75]
    assert math.isclose(ctx.get_snapshot().cost_usd_accumulated, 1.135)


def test_cost_of_prices_the_result_when_nothing_was_reported() -> None:
    seen: list[object] = []

    def cost_of(result: object) -> float | None:
        seen.append(result)
        return result["usd"] if isinstance(result, dict) else None

    ctx = ctx_with(10.0, cost_of=cost_of)
    ctx.wrap_llm_call(lambda: {"usd": 0.3}, WrapOptions(cost_estimate_hint=0.1))
    ctx.wrap_llm_call(lambda: "no price", WrapOptions(cost_estimate_hint=0.1))

    def reported() -> dict[str, float]:
        report_cost(2.0)
        return {"usd": 0.3}

    ctx.wrap_llm_call(reported)
    assert [n.cost_usd for n in ctx.get_snapshot().nodes] == [0.3, 0.1, 2.0]
    assert seen == [{"usd": 0.3}, "no price"], "report_cost wins: cost_of is not asked"
    assert ctx.cost_of is cost_of


@pytest.mark.parametrize("bad", [float("nan"), -1.0, "1.0", math.inf])
def test_a_failing_or_invalid_cost_of_is_logged_and_the_estimate_charged(
    bad: object, caplog: pytest.LogCaptureFixture
) -> None:
    def cost_of(result: object) -> object:
        return bad

    ctx = ctx_with(10.0, cost_of=cost_of)
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.wrap_llm_call(lambda: 1, WrapOptions("x", cost_estimate_hint=0.2)) is Decision.ALLOW
    assert ctx.get_snapshot().nodes[0].cost_usd == 0.2
    assert any("cost_of" in r.getMessage() for r in caplog.records)


def test_a_raising_cost_of_never_stops_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    def cost_of(result: object) -> float:
        raise KeyError("usage")

    ctx = ctx_with(10.0, cost_of=cost_of)
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.wrap_llm_call(lambda: 1, WrapOptions(cost_estimate_hint=0.2)) is Decision.ALLOW
    assert ctx.get_snapshot().cost_usd_accumulated == 0.2
    assert any(r.levelno == logging.WARNING and "cost_of" in r.getMessage() for r in caplog.records)


def test_cost_of_must_be_callable_and_keyword_only() -> None:
    with pytest.raises(TypeError, match="cost_of"):
        ctx_with(1.0, cost_of=5)
    cfg = ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=1)
    with pytest.raises(TypeError):
        ExecutionContext(cfg, None, None, None, None, None, lambda r: 0.0)  # type: ignore[misc]


def test_report_cost_outside_a_wrapped_call_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="inside a call wrapped"):
        report_cost(1.0)


async def test_report_cost_after_the_call_ended_is_a_clear_error() -> None:
    ctx = ctx_with(10.0)
    leaked: list[contextvars.Context] = []

    async def leak() -> None:
        leaked.append(contextvars.copy_context())

    await ctx.wrap_llm_call_async(leak)
    with pytest.raises(RuntimeError, match="ended"):
        leaked[0].run(report_cost, 1.0)
    assert ctx.get_snapshot().cost_usd_accumulated == 0.0


def test_report_cost_reaches_the_innermost_call_across_sync_and_async() -> None:
    outer = ctx_with(10.0)
    inner = ctx_with(10.0)

    def sync_inside_async() -> None:
        report_cost(0.5)  # the sync call, not the async one around it

    async def async_call() -> None:
        report_cost(0.25)
        inner.wrap_tool_call(sync_inside_async)
        report_cost(0.125)  # back in the async call

    def sync_outer() -> None:
        asyncio.run(outer.wrap_llm_call_async(async_call))
        report_cost(1.0)  # back in the sync call of `inner`

    inner.wrap_llm_call(sync_outer)
    assert [n.cost_usd for n in inner.get_snapshot().nodes] == [0.5, 1.0]
    assert [n.cost_usd for n in outer.get_snapshot().nodes] == [0.375]


@pytest.mark.parametrize(
    ("kwargs", "error", "argument"),
    [
        ({"cost_usd": float("nan")}, ValueError, "cost_usd"),
        ({"cost_usd": float("inf")}, ValueError, "cost_usd"),
        ({"cost_usd": -0.01}, ValueError, "cost_usd"),
        ({"cost_usd": Decimal("NaN")}, ValueError, "cost_usd"),
        ({"cost_usd": 10**400}, ValueError, "cost_usd"),
        ({"cost_usd": "1"}, TypeError, "cost_usd"),
        ({"cost_usd": True}, TypeError, "cost_usd"),
        ({"cost_usd": 1.0, "tokens_in": -1}, ValueError, "tokens_in"),
        ({"cost_usd": 1.0, "tokens_out": 2**63}, ValueError, "tokens_out"),
        ({"cost_usd": 1.0, "tokens_out": 1.5}, TypeError, "tokens_out"),
    ],
)
def test_bad_reports_name_the_argument_and_change_nothing(
    kwargs: dict[str, Any], error: type[Exception], argument: str
) -> None:
    ctx = ctx_with(10.0)
    caught: list[BaseException] = []

    def call() -> None:
        report_cost(0.5)
        try:
            report_cost(**kwargs)
        except Exception as exc:
            caught.append(exc)

    assert ctx.wrap_llm_call(call) is Decision.ALLOW
    assert len(caught) == 1
    assert isinstance(caught[0], error)
    assert argument in str(caught[0])
    assert ctx.get_snapshot().nodes[0].cost_usd == 0.5


def test_token_totals_that_would_overflow_are_refused() -> None:
    ctx = ctx_with(10.0)
    caught: list[BaseException] = []

    def call() -> None:
        report_cost(0.0, tokens_out=2**62)
        try:
            report_cost(0.0, tokens_out=2**62)
        except ValueError as exc:
            caught.append(exc)

    ctx.wrap_llm_call(call)
    assert caught and "tokens_out" in str(caught[0])
    summary = ctx.get_snapshot().graph_summary
    assert summary is not None and summary["total_tokens_out"] == 2**62


def test_a_cost_total_that_would_overflow_rejects_the_call_and_keeps_counters() -> None:
    ctx = ctx_with(1.7e308)
    ctx.wrap_llm_call(lambda: report_cost(1e308))
    before = counters(ctx)
    with pytest.raises(ValueError, match="cost_usd"):
        ctx.wrap_llm_call(lambda: report_cost(1e308))
    steps, cost, retries, _ = counters(ctx)
    assert (steps, cost, retries) == before[:3]
    assert ctx.get_snapshot().nodes[-1].status == "error"
    assert b"Infinity" not in ctx.get_graph_snapshot_json()
    assert ctx.reserved_usd == 0.0


def test_reservations_of_calls_in_flight_block_admission() -> None:
    ctx = ctx_with(1.0)
    inside = threading.Event()
    release = threading.Event()
    decisions: list[Decision] = []

    def slow() -> None:
        inside.set()
        release.wait(5)
        report_cost(0.2)

    t = threading.Thread(
        target=lambda: decisions.append(ctx.wrap_llm_call(slow, WrapOptions(cost_estimate_hint=0.8)))
    )
    t.start()
    assert inside.wait(5)
    assert ctx.reserved_usd == 0.8
    assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.3)) is Decision.HALT
    assert ctx.last_stop_reason == "budget_exceeded"
    release.set()
    t.join(5)
    assert decisions == [Decision.ALLOW]
    assert ctx.reserved_usd == 0.0
    # Settled at 0.2: 0.2 + 0.3 fits now.
    assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.3)) is Decision.ALLOW


async def test_async_wraps_settle_at_the_reported_cost() -> None:
    ctx = ctx_with(0.5)

    async def provider() -> None:
        await asyncio.sleep(0)
        report_cost(1.0)

    assert await ctx.wrap_llm_call_async(provider) is Decision.ALLOW
    assert await ctx.wrap_llm_call_async(provider) is Decision.HALT
    assert ctx.get_snapshot().cost_usd_accumulated == 1.0


async def test_async_cost_of_sees_the_coroutine_result() -> None:
    ctx = ctx_with(10.0, cost_of=lambda r: r * 0.001)

    async def provider() -> int:
        return 250

    assert await ctx.wrap_llm_call_async(provider) is Decision.ALLOW
    assert ctx.get_snapshot().nodes[0].cost_usd == 0.25


async def test_decorators_and_blocks_report_their_cost() -> None:
    ctx = ctx_with(3.0, cost_of=lambda r: 0.5 if r == "priced" else None)

    @ctx.llm_call("sync", cost=0.1)
    def sync_fn() -> str:
        return "priced"

    @ctx.llm_call("async", cost=0.1)
    async def async_fn() -> str:
        report_cost(0.75)
        return "priced"

    assert sync_fn() == "priced"
    assert await async_fn() == "priced"
    with ctx.tool_call("block", cost=0.1):
        report_cost(1.25)
    with ctx.tool_call("estimated", cost=0.1):
        pass
    costs = [n.cost_usd for n in ctx.get_snapshot().nodes]
    assert costs == [0.5, 0.75, 1.25, 0.1]
    with pytest.raises(CallRefused) as refused, ctx.llm_call("over", cost=0.5):
        pass
    assert refused.value.stop_reason == "budget_exceeded"


def test_a_childs_actual_cost_counts_for_its_parent() -> None:
    parent = ctx_with(1.0)
    child = parent.spawn_child(max_cost_usd=5.0)
    assert child.wrap_llm_call(lambda: report_cost(1.5)) is Decision.ALLOW
    assert parent.get_snapshot().cost_usd_accumulated == 1.5
    assert parent.wrap_llm_call(lambda: None) is Decision.HALT
    assert parent.last_stop_reason == "budget_exceeded"
    assert parent.cancellation_token.is_cancelled
