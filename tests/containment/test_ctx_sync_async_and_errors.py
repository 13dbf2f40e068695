"""docs/design.md §21 (sync/async mismatch) and §22 (failures keep their message)."""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
import warnings
from collections.abc import Coroutine

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.shield import Decision


def fresh() -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=10.0, max_steps=100, max_retries_total=10))


def untouched(ctx: ExecutionContext) -> bool:
    snap = ctx.get_snapshot()
    summary = snap.graph_summary
    assert summary is not None
    return (snap.step_count, snap.retries_used, len(snap.nodes), summary["total_llm_calls"]) == (0, 0, 0, 0)


async def coro_fn() -> int:
    return 1


def returns_coroutine() -> Coroutine[None, None, int]:
    """Not a coroutine function, but what it returns is awaitable."""
    return coro_fn()


class AsyncMethod:
    async def call(self) -> int:
        return 1


@pytest.mark.parametrize(
    "fn",
    [coro_fn, functools.partial(coro_fn), AsyncMethod().call],
    ids=["function", "partial", "bound-method"],
)
def test_a_sync_wrap_refuses_a_coroutine_function_before_counting(fn: object) -> None:
    ctx = fresh()
    with pytest.raises(TypeError, match="coroutine function"):
        ctx.wrap_llm_call(fn)  # type: ignore[arg-type]
    assert untouched(ctx)
    assert ctx.reserved_usd == 0.0


def test_a_sync_wrap_refuses_a_callable_returning_an_awaitable_without_charging() -> None:
    ctx = fresh()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the coroutine is closed: no "never awaited" warning
        with pytest.raises(TypeError, match="wrap_llm_call_async"):
            ctx.wrap_llm_call(returns_coroutine, WrapOptions("x", cost_estimate_hint=0.5))
    snap = ctx.get_snapshot()
    assert (snap.step_count, snap.cost_usd_accumulated, snap.retries_used) == (0, 0.0, 0)
    assert [n.status for n in snap.nodes] == ["error"]
    assert ctx.reserved_usd == 0.0
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW


def test_non_callables_are_refused_before_counting() -> None:
    ctx = fresh()
    for bad in (None, 5, "fn"):
        with pytest.raises(TypeError, match="callable"):
            ctx.wrap_tool_call(bad)  # type: ignore[arg-type]
    assert untouched(ctx)


async def test_an_async_wrap_runs_a_plain_callable_in_a_worker_thread() -> None:
    ctx = fresh()
    seen: list[tuple[bool, bool]] = []

    def blocking() -> str:
        seen.append(
            (threading.current_thread() is threading.main_thread(), ctx.cancellation_token.is_cancelled)
        )
        report_cost(0.25)
        return "done"

    assert await ctx.wrap_llm_call_async(blocking) is Decision.ALLOW
    assert seen == [(False, False)]
    assert ctx.get_snapshot().cost_usd_accumulated == 0.25


async def test_a_plain_callable_returning_a_coroutine_is_awaited() -> None:
    ctx = fresh()
    assert await ctx.wrap_llm_call_async(returns_coroutine) is Decision.ALLOW
    assert ctx.get_snapshot().step_count == 1


async def test_the_worker_thread_sees_an_abort_through_the_token() -> None:
    ctx = fresh()
    started = threading.Event()
    observed: list[bool] = []

    def cooperative() -> None:
        started.set()
        observed.append(ctx.cancellation_token.wait(5))

    task = asyncio.create_task(ctx.wrap_llm_call_async(cooperative))
    assert await asyncio.to_thread(started.wait, 5)
    ctx.abort("user stop")
    assert await task is Decision.HALT
    # The thread itself is cooperative: it saw the token and ended on its own.
    for _ in range(500):
        if observed:
            break
        await asyncio.sleep(0.01)
    assert observed == [True]
    assert ctx.get_snapshot().nodes[0].status == "aborted"


def test_a_failure_keeps_its_message_cut_to_1000_code_points(caplog: pytest.LogCaptureFixture) -> None:
    ctx = fresh()
    long = "ü" * 1500

    def fails() -> None:
        raise ValueError(long)

    with caplog.at_level(logging.DEBUG, logger="chainwarden.containment"):
        assert ctx.wrap_llm_call(fails, WrapOptions("flaky")) is Decision.RETRY
    record = ctx.get_snapshot().nodes[0]
    assert record.status == "error"
    assert record.error_message == "ü" * 1000
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and r.exc_info is not None]
    assert debug and debug[0].exc_info is not None and debug[0].exc_info[0] is ValueError


def test_messages_of_halted_and_unprintable_failures() -> None:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=10.0, max_steps=100, max_retries_total=0))

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    def fails() -> None:
        raise Unprintable

    assert ctx.wrap_llm_call(fails) is Decision.HALT  # no retry left: provider_error
    assert ctx.get_snapshot().nodes[0].error_message == "<unprintable Unprintable>"
    ok = fresh()
    ok.wrap_llm_call(lambda: None)
    assert ok.get_snapshot().nodes[0].error_message is None


async def test_async_failures_keep_their_message() -> None:
    ctx = fresh()

    async def fails() -> None:
        raise ConnectionError("upstream reset by peer")

    assert await ctx.wrap_llm_call_async(fails) is Decision.RETRY
    assert ctx.get_snapshot().nodes[0].error_message == "upstream reset by peer"
