"""A refusal says which limit and the figures; the chain's root node ends with the chain."""

from __future__ import annotations

import pickle

import pytest

from chainwarden.containment import (
    CallRefused,
    ChainHalted,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
    report_cost,
)
from chainwarden.shield import Decision


def ctx_with(**limits: float) -> ExecutionContext:
    values: dict[str, float] = {"max_cost_usd": 1.0, "max_steps": 10, "max_retries_total": 3}
    values.update(limits)
    return ExecutionContext(ExecutionConfig(**values))  # type: ignore[arg-type]


def refusal(ctx: ExecutionContext, cost: float = 0.0) -> CallRefused:
    with pytest.raises(CallRefused) as caught, ctx.llm_call(name="next", cost=cost):
        pass
    return caught.value


def test_a_budget_refusal_names_spent_and_ceiling() -> None:
    ctx = ctx_with(max_cost_usd=1.0)
    ctx.wrap_llm_call(lambda: report_cost(1.02))
    refused = refusal(ctx)
    assert refused.stop_reason == "budget_exceeded"
    assert str(refused) == "call refused: budget_exceeded (HALT): spent $1.0200 of the $1.0000 ceiling"
    assert refused.detail == "spent $1.0200 of the $1.0000 ceiling"


def test_an_estimate_refusal_names_what_calls_in_flight_reserved() -> None:
    ctx = ctx_with(max_cost_usd=1.0)
    with ctx.llm_call(name="outer", cost=0.75):
        refused = refusal(ctx, cost=0.5)
    assert refused.detail == "spent $0.0000 ($0.7500 reserved by calls in flight) of the $1.0000 ceiling"


def test_step_retry_and_timeout_refusals_name_their_figures() -> None:
    ctx = ctx_with(max_steps=2)
    ctx.wrap_llm_call(lambda: None)
    ctx.wrap_llm_call(lambda: None)
    assert refusal(ctx).detail == "2 steps of the limit of 2"

    ctx = ctx_with(max_retries_total=1)

    def fails() -> None:
        raise ConnectionError("down")

    assert ctx.wrap_llm_call(fails) is Decision.RETRY
    with pytest.raises(CallRefused) as caught, ctx.llm_call(name="again"):
        raise ConnectionError("down again")
    assert caught.value.stop_reason == "provider_error"
    assert caught.value.detail == "1 of 1 retries used, and a failure found none left"

    ctx = ctx_with(timeout_ms=1)
    ctx.cancellation_token.wait(5.0)
    detail = refusal(ctx).detail
    assert detail is not None and detail.endswith("ms elapsed of the chain's timeout_ms=1"), detail


def test_chain_halted_keeps_the_figures_through_pickle() -> None:
    halted = ChainHalted(Decision.HALT, "budget_exceeded", "spent $2.0000 of the $1.0000 ceiling")
    assert str(halted) == "chain halted: budget_exceeded (HALT): spent $2.0000 of the $1.0000 ceiling"
    again = pickle.loads(pickle.dumps(halted))
    assert (type(again), str(again), again.detail) == (ChainHalted, str(halted), halted.detail)
    assert str(ChainHalted(Decision.HALT, None)) == "chain halted: unknown (HALT)"


def root(ctx: ExecutionContext) -> dict[str, object]:
    graph = ctx.get_graph_snapshot()
    node: dict[str, object] = graph["nodes"][graph["root_id"]]
    return node


def test_the_root_ends_with_the_chain() -> None:
    with ctx_with() as ctx:
        ctx.wrap_llm_call(lambda: report_cost(0.25))
        assert root(ctx)["status"] == "created"
    assert root(ctx)["status"] == "success"
    assert ctx.get_graph_snapshot()["aggregates"]["total_cost_usd"] == 0.25, "the root adds no cost"

    with ctx_with(max_steps=1) as stopped:
        stopped.wrap_llm_call(lambda: None)
        assert stopped.wrap_llm_call(lambda: None) is Decision.HALT
    assert (root(stopped)["status"], root(stopped)["stop_reason"]) == ("halt", "step_limit_exceeded")

    with pytest.raises(KeyError), ctx_with() as failed:
        raise KeyError("the agent's own bug")
    assert (root(failed)["status"], root(failed)["error_class"]) == ("fail", "KeyError")

    aborted = ctx_with()
    aborted.abort("user pressed stop")
    aborted.close()
    aborted.close()
    assert (root(aborted)["status"], root(aborted)["stop_reason"]) == ("halt", "aborted")


async def test_the_root_ends_with_an_async_chain() -> None:
    async with ctx_with(timeout_ms=1) as ctx:
        ctx.cancellation_token.wait(5.0)
        assert await ctx.wrap_llm_call_async(lambda: None, WrapOptions("late")) is Decision.HALT
    assert (root(ctx)["status"], root(ctx)["stop_reason"]) == ("halt", "timeout")
