"""Checked by ``mypy --strict`` in ``make lint`` (pyproject's ``[tool.mypy] files``) and run by
tests/containment/test_ergonomics.py: the decorators keep the decorated function's type.

``assert_type`` fails mypy when a type is lost; each ``type: ignore[...]`` fails it (``warn_unused_ignores``)
when the wrong call it marks stops being an error, i.e. when the parameters were erased to ``...``."""

from __future__ import annotations

from typing import assert_type

from chainwarden import ExecutionConfig, ExecutionContext, contained, current_context
from chainwarden.integrations.langgraph import contained_node


def check() -> list[object]:
    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=100, max_retries_total=1))

    @ctx.llm_call
    def bare(question: str, *, loud: bool = False) -> str:
        return question.upper() if loud else question

    @ctx.tool_call("search", 0.01)
    def search(query: str) -> list[int]:
        return [len(query)]

    @contained
    def helper(x: int) -> float:
        return x / 2

    @contained(kind="tool", name="fetch")
    async def fetch(url: str) -> bytes:
        return url.encode()

    @contained_node(ctx)
    def node(state: dict[str, int]) -> dict[str, int]:
        return state

    assert_type(bare("q", loud=True), str)
    assert_type(search("abc"), list[int])
    assert_type(helper(3), float)
    assert_type(node({"a": 1}), dict[str, int])
    assert_type(current_context(), ExecutionContext | None)

    def wrong_calls() -> None:  # type-checked, never run
        bare(1)  # type: ignore[arg-type]
        search("a", "b")  # type: ignore[call-arg]
        helper("3")  # type: ignore[arg-type]
        fetch(1).close()  # type: ignore[arg-type]
        node([1])  # type: ignore[arg-type]

    assert callable(wrong_calls)
    coroutine = fetch("u")
    coroutine.close()
    return [bare("q"), search("abc"), helper(3), node({"a": 1})]
