"""@ctx.llm_call / @ctx.tool_call: contained calls that return results and raise on refusal."""

import asyncio

import pytest

from chainwarden.containment import CallRefused, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision


def make(max_steps: int = 10, max_retries_total: int = 3) -> ExecutionContext:
    cfg = ExecutionConfig(max_cost_usd=1.0, max_steps=max_steps, max_retries_total=max_retries_total)
    return ExecutionContext(cfg)


def test_decorated_function_returns_its_result_and_is_counted() -> None:
    ctx = make()

    @ctx.llm_call(name="summarise", cost=0.25)
    def summarise(text: str, *, words: int) -> str:
        return " ".join(text.split()[:words])

    assert summarise("a b c d", words=2) == "a b"
    assert summarise.__name__ == "summarise"
    snap = ctx.get_snapshot()
    assert snap.step_count == 1
    assert snap.cost_usd_accumulated == 0.25
    assert snap.nodes[0].operation_name == "summarise"


def test_refused_call_raises_with_the_stop_reason() -> None:
    ctx = make(max_steps=1)

    @ctx.tool_call(name="search")
    def search() -> int:
        return 1

    assert search() == 1
    with pytest.raises(CallRefused) as info:
        search()
    assert info.value.stop_reason == "step_limit_exceeded"
    assert info.value.decision == "HALT"


def test_failure_propagates_after_being_counted() -> None:
    ctx = make(max_retries_total=2)

    @ctx.llm_call(name="flaky")
    def flaky() -> None:
        raise ConnectionError("reset")

    for used in (1, 2):
        with pytest.raises(ConnectionError):
            flaky()
        assert ctx.get_snapshot().retries_used == used
    # The failure that finds the budget spent is a chain stop, chained to the original error.
    with pytest.raises(CallRefused) as info:
        flaky()
    assert info.value.stop_reason == "provider_error"
    assert isinstance(info.value.__cause__, ConnectionError)


async def test_async_functions_are_wrapped_as_async_calls() -> None:
    ctx = make()

    @ctx.llm_call(name="plan", cost=0.5)
    async def plan(goal: str) -> str:
        return f"plan for {goal}"

    assert await plan("x") == "plan for x"
    assert ctx.get_snapshot().cost_usd_accumulated == 0.5


def test_decorator_validates_its_options() -> None:
    ctx = make()
    with pytest.raises(ValueError):
        ctx.llm_call(cost=-1.0)
    with pytest.raises(TypeError):
        ctx.tool_call(name=3)  # type: ignore[arg-type]


def test_with_block_is_one_contained_call() -> None:
    ctx = make(max_steps=2)
    with ctx.llm_call(name="plan", cost=0.25):
        assert ctx.wrap_tool_call(lambda: None) is Decision.ALLOW  # nests under the block
    snap = ctx.get_snapshot()
    inner, block = snap.nodes
    assert (block.operation_name, block.status, block.cost_usd) == ("plan", "ok", 0.25)
    assert inner.parent_id == block.node_id
    assert snap.step_count == 2
    ran = []
    with pytest.raises(CallRefused) as info, ctx.llm_call(name="refused"):
        ran.append(True)
    assert ran == []
    assert info.value.stop_reason == "step_limit_exceeded"


def test_with_block_failure_is_counted_and_propagates() -> None:
    ctx = make(max_retries_total=2)
    for used in (1, 2):
        with pytest.raises(KeyError), ctx.tool_call(name="lookup"):
            raise KeyError("missing")
        assert ctx.get_snapshot().retries_used == used
    with pytest.raises(CallRefused) as info, ctx.tool_call(name="lookup"):
        raise KeyError("missing again")
    assert info.value.stop_reason == "provider_error"
    assert isinstance(info.value.__cause__, KeyError)


async def test_with_block_around_awaits_keeps_nesting_per_task() -> None:
    ctx = make(max_steps=20)

    async def agent(label: str) -> None:
        with ctx.llm_call(name=f"block-{label}"):
            await asyncio.sleep(0)  # the other task runs its block meanwhile
            ctx.wrap_tool_call(lambda: None, WrapOptions(f"tool-{label}"))
            await asyncio.sleep(0)

    await asyncio.gather(agent("a"), agent("b"))
    by_name = {n.operation_name: n for n in ctx.get_snapshot().nodes}
    for label in "ab":
        assert by_name[f"tool-{label}"].parent_id == by_name[f"block-{label}"].node_id
