"""Hypothesis fuzzing of the context's public entry points: random limits, random WrapOptions,
random `report_cost` values (NaN, inf, negative, huge). Every step ends in success or a clear
Python exception (never a Rust panic, which is a BaseException and fails the test), a wrap that
raises leaves the counters as they were, and the snapshots stay strict JSON."""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chainwarden.containment import CallRefused, ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.shield import Decision

CLEAR = (TypeError, ValueError, RuntimeError, OverflowError)

numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, 0.1, 0.5, 1.0, 1e308, -0.0, -1.0]),
    st.integers(min_value=-(2**70), max_value=2**70),
)
tokens = st.none() | st.integers(min_value=-5, max_value=2**64) | st.sampled_from([1.5, "3", True])


@dataclass(frozen=True)
class Step:
    kind: str  # llm | tool | async_llm | block | abort | snapshot
    name: Any
    estimate: Any
    timeout_ms: Any
    reports: tuple[tuple[Any, Any, Any], ...]
    fails: bool
    returns: Any


steps = st.builds(
    Step,
    kind=st.sampled_from(["llm", "tool", "async_llm", "block", "abort", "snapshot"]),
    name=st.text(max_size=8) | st.sampled_from([None, 3]),
    estimate=numbers,
    timeout_ms=st.none() | st.integers(-1, 50),
    reports=st.lists(st.tuples(numbers, tokens, tokens), max_size=3).map(tuple),
    fails=st.booleans(),
    returns=st.sampled_from([None, 1, "x", 0.25]),
)


def strict_json(data: bytes | str) -> None:
    def reject(constant: str) -> None:
        raise AssertionError(f"non-strict JSON constant {constant}")

    json.loads(data, parse_constant=reject)


def state(ctx: ExecutionContext) -> tuple[int, float, int, float]:
    snap = ctx.get_snapshot()
    return snap.step_count, snap.cost_usd_accumulated, snap.retries_used, ctx.reserved_usd


def make_call(step: Step) -> Any:
    def call() -> Any:
        for cost, tin, tout in step.reports:
            with contextlib.suppress(*CLEAR):
                report_cost(cost, tokens_in=tin, tokens_out=tout)
        if step.fails:
            raise ConnectionError("provider down")
        return step.returns

    return call


def run_step(ctx: ExecutionContext, step: Step) -> None:
    if step.kind == "abort":
        ctx.abort("fuzz")
        return
    if step.kind == "snapshot":
        strict_json(ctx.get_graph_snapshot_json())
        return
    try:
        opts = WrapOptions(step.name, step.estimate, step.timeout_ms)
    except CLEAR:
        return
    before = state(ctx)
    try:
        if step.kind == "llm":
            decision = ctx.wrap_llm_call(make_call(step), opts)
        elif step.kind == "tool":
            decision = ctx.wrap_tool_call(make_call(step), opts)
        elif step.kind == "async_llm":
            call = make_call(step)

            async def acall() -> Any:
                return call()

            decision = asyncio.run(ctx.wrap_llm_call_async(acall, opts))
        else:
            try:
                with ctx.llm_call(opts.operation_name, opts.cost_estimate_hint):
                    make_call(step)()
            except ConnectionError:
                pass
            decision = Decision.ALLOW
    except CLEAR as exc:
        # A wrap that raises charged nothing and reserved nothing, unless it is the refusal of a block
        # that ran, reported and failed: that usage happened and is charged (docs/design.md §30).
        if not isinstance(exc, CallRefused):
            assert state(ctx) == before
        return
    except Exception as exc:  # CallRefused from a block
        assert type(exc).__name__ == "CallRefused", exc
        return
    assert decision in (Decision.ALLOW, Decision.RETRY, Decision.HALT)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    max_cost=numbers,
    max_steps=st.integers(min_value=-1, max_value=2**64),
    max_retries=st.integers(min_value=-1, max_value=20),
    cost_of=st.none() | st.sampled_from(["price", "raise", "nan"]),
    program=st.lists(steps, max_size=12),
)
def test_random_programs_end_in_success_or_a_clear_error(
    max_cost: Any, max_steps: int, max_retries: int, cost_of: str | None, program: list[Step]
) -> None:
    try:
        config = ExecutionConfig(max_cost_usd=max_cost, max_steps=max_steps, max_retries_total=max_retries)
    except CLEAR:
        return
    pricing = {
        None: None,
        "price": lambda r: r if isinstance(r, float) else None,
        "raise": lambda r: 1 / 0,
        "nan": lambda r: math.nan,
    }[cost_of]
    try:
        ctx = ExecutionContext(config, cost_of=pricing, max_nodes=8)
    except CLEAR:
        return
    with ctx:
        for step in program:
            run_step(ctx, step)
        snap = ctx.get_snapshot()
        ok = [n for n in snap.nodes if n.status == "ok"]
        assert snap.step_count == len(ok)
        # Successes and calls that reported and then failed carry what the chain was charged (§30).
        assert math.isclose(
            snap.cost_usd_accumulated, math.fsum(n.cost_usd for n in snap.nodes), rel_tol=1e-9
        )
        assert math.isfinite(snap.cost_usd_accumulated)
        assert snap.retries_used <= config.max_retries_total or snap.retries_used == 0
        assert ctx.reserved_usd == 0.0
        strict_json(ctx.get_graph_snapshot_json())
