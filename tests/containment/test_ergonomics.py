"""Decorators bare or with arguments, named after the function; ``current_context()`` and ``@contained``."""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from typing import Any

import pytest

import chainwarden
from chainwarden import ExecutionConfig, ExecutionContext, contained, current_context
from chainwarden.containment import CallRefused, WrapOptions


def context(max_steps: int = 100) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=max_steps, max_retries_total=1))


def names(ctx: ExecutionContext) -> list[tuple[str, str]]:
    return [(n.kind, n.operation_name) for n in ctx.get_snapshot().nodes]


def test_bare_decorators_are_named_after_the_qualified_name() -> None:
    ctx = context()

    @ctx.llm_call
    def plan(goal: str) -> str:
        return goal + "!"

    class Agent:
        @ctx.tool_call
        def search(self, query: str) -> int:
            return len(query)

    @ctx.llm_call(cost=0.25)
    async def draft() -> str:
        return "d"

    @ctx.llm_call("explicit")
    def other() -> None:
        return None

    assert plan("go") == "go!"
    assert Agent().search("abc") == 3
    assert asyncio.run(draft()) == "d"
    other()
    with ctx.llm_call():  # a block has no function: unnamed as before
        pass
    qual = "test_bare_decorators_are_named_after_the_qualified_name.<locals>"
    assert names(ctx) == [
        ("llm", f"{qual}.plan"),
        ("tool", f"{qual}.Agent.search"),
        ("llm", f"{qual}.draft"),
        ("llm", "explicit"),
        ("llm", ""),
    ]
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.25)
    assert plan.__name__ == "plan" and plan.__wrapped__ is not None  # type: ignore[attr-defined]


def test_bad_decorator_arguments() -> None:
    ctx = context()
    with pytest.raises(ValueError, match="cost_estimate_hint"):
        ctx.llm_call(cost=-1.0)
    with pytest.raises(TypeError, match="decorates a function"):
        ctx.llm_call("x")(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="kind"):
        contained(kind="agent")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="cost_estimate_hint"):
        contained(cost=float("inf"))
    assert names(ctx) == []


def test_current_context_follows_with_blocks_and_wrapped_calls() -> None:
    outer, inner = context(), context()
    assert current_context() is None
    seen: list[Any] = []
    with outer:
        seen.append(current_context())
        inner.wrap_llm_call(lambda: seen.append(current_context()))  # inside inner's call
        seen.append(current_context())
        with inner:
            seen.append(current_context())
            outer.wrap_llm_call(lambda: seen.append(current_context()))
        seen.append(current_context())

        def nested_block() -> None:
            with ctx3:
                seen.append(current_context())  # a context entered inside a call is the inner one

        ctx3 = context()
        inner2 = context()
        inner2.wrap_tool_call(nested_block)
    seen.append(current_context())
    assert seen == [outer, inner, outer, inner, outer, outer, ctx3, None]


async def test_current_context_in_tasks_and_worker_threads() -> None:
    ctx = context()
    seen: list[Any] = []

    async def in_task() -> None:
        seen.append(current_context())

    async with ctx:
        await asyncio.gather(in_task(), in_task())
        seen.append(await asyncio.to_thread(current_context))
        plain: list[Any] = []
        thread = threading.Thread(target=lambda: plain.append(current_context()))
        thread.start()
        thread.join(5)
        copied: list[Any] = []
        run = contextvars.copy_context().run
        worker = threading.Thread(target=run, args=(lambda: copied.append(current_context()),))
        worker.start()
        worker.join(5)
    other = context()
    await other.wrap_llm_call_async(in_task)
    assert seen == [ctx, ctx, ctx, other]
    assert plain == [None]  # a bare thread starts with an empty context (docs/containment.md)
    assert copied == [ctx]
    assert current_context() is None


def test_contained_uses_the_current_context() -> None:
    @contained
    def summarize(text: str) -> str:
        return text[:3]

    @contained(kind="tool", name="lookup", cost=0.5)
    def lookup(key: str) -> str:
        return key * 2

    assert summarize("uncontained") == "unc"  # outside any context it simply runs
    ctx = context(max_steps=2)
    with ctx:
        assert summarize("abcdef") == "abc"
        assert lookup("k") == "kk"
        with pytest.raises(CallRefused) as refused:
            summarize("over the step limit")
    assert refused.value.stop_reason == "step_limit_exceeded"
    assert names(ctx) == [
        ("llm", "test_contained_uses_the_current_context.<locals>.summarize"),
        ("tool", "lookup"),
        ("llm", "test_contained_uses_the_current_context.<locals>.summarize"),
    ]
    # Inside a wrapped call of a context, without any `with`: that context.
    other = context()
    other.wrap_llm_call(lambda: summarize("nested"), WrapOptions("outer"))
    snapshot = other.get_snapshot().nodes
    assert snapshot[0].operation_name.endswith("summarize")
    assert snapshot[0].parent_id == snapshot[1].node_id


async def test_contained_async() -> None:
    @contained(name="fetch")
    async def fetch(url: str) -> str:
        return url.upper()

    assert await fetch("a") == "A"
    ctx = context()
    async with ctx:
        assert await fetch("b") == "B"
    assert names(ctx) == [("llm", "fetch")]


def test_library_loggers(caplog: pytest.LogCaptureFixture) -> None:
    root = logging.getLogger("chainwarden")
    assert any(isinstance(h, logging.NullHandler) for h in root.handlers)
    assert chainwarden.__name__ == "chainwarden"

    @contained
    def helper() -> int:
        return 1

    with caplog.at_level(logging.DEBUG, logger="chainwarden"):
        helper()
    assert [r.name for r in caplog.records] == ["chainwarden.containment"]
    assert "not contained" in caplog.records[0].getMessage()


def test_first_forced_stop_is_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    ctx = context(max_steps=1)
    with caplog.at_level(logging.INFO, logger="chainwarden.containment"):
        for _ in range(4):
            ctx.wrap_llm_call(lambda: None)
    stops = [r for r in caplog.records if "stopped" in r.getMessage()]
    assert len(stops) == 1
    assert "step_limit_exceeded" in stops[0].getMessage()
    assert ctx.metadata.chain_id in stops[0].getMessage()
