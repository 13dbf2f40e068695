"""Differential tests against veronica-core 3.10.0 on random call sequences.

Same configuration, same calls, same pipeline and breaker settings: the decisions and counters
must agree after every call. The documented deviations are normalised explicitly:

* the retry budget (docs/design.md §34): the reference refuses every call once ``max_retries_total``
  failures were counted, so its last RETRY cannot be acted on; here a call is refused only after a
  failure found no retry left. The two agree until the reference's budget is spent, so a sequence
  is compared up to that call (the rest is tested on its own in test_ctx_limit_boundaries.py);
* money follows what happened (docs/design.md §30): a call that reported a cost and then failed is
  charged it here, nothing by the reference; calls that fail do not report in this comparison;
* the graph's ``total_retries`` counts the retries the chain consumed (the reference's graph
  stays at 0);
* real cost (docs/design.md §20): ours settles a call at what it reports through ``report_cost``,
  the reference always charges the estimate. The model: a call that reports exactly its
  estimate must behave as the reference's estimated call, so half of the calls here report;
* chain-level event types are the stop reasons of docs/design.md §5 (``budget_exceeded``) where the reference
  says ``CHAIN_BUDGET_EXCEEDED``; ``provider_rate_limit`` / ``provider_error`` are ours only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from veronica_core.circuit_breaker import CircuitBreaker as RefBreaker
from veronica_core.containment import ExecutionConfig as RefConfig
from veronica_core.containment import ExecutionContext as RefContext
from veronica_core.containment import WrapOptions as RefOptions
from veronica_core.shield.budget_window import BudgetWindowHook as RefWindow
from veronica_core.shield.pipeline import ShieldPipeline as RefPipeline

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.shield import BudgetWindowHook, CircuitBreaker, ShieldPipeline

OURS_ONLY = {"provider_rate_limit", "provider_error"}


@dataclass(frozen=True)
class Call:
    kind: str  # "llm" | "tool" | "abort"
    cost: float
    fails: bool
    reports: bool


@dataclass(frozen=True)
class Setup:
    max_cost_usd: float
    max_steps: int
    max_retries_total: int
    breaker_threshold: int | None
    window: tuple[int, float] | None


calls = st.lists(
    st.builds(
        Call,
        kind=st.sampled_from(["llm", "llm", "tool", "tool", "abort"]),
        cost=st.sampled_from([0.0, 0.05, 0.1, 0.25, 0.5]),
        fails=st.booleans(),
        reports=st.booleans(),
    ),
    max_size=25,
)
setups = st.builds(
    Setup,
    max_cost_usd=st.sampled_from([0.0, 0.3, 0.5, 1.0, 2.0]),
    max_steps=st.integers(0, 8),
    max_retries_total=st.integers(0, 5),
    breaker_threshold=st.none() | st.integers(1, 4),
    window=st.none() | st.tuples(st.integers(1, 6), st.sampled_from([0.5, 1.0])),
)


def build(setup: Setup) -> tuple[ExecutionContext, Any]:
    limits = {
        "max_cost_usd": setup.max_cost_usd,
        "max_steps": setup.max_steps,
        "max_retries_total": setup.max_retries_total,
    }
    ours_pipeline = ref_pipeline = None
    if setup.window is not None:
        max_calls, threshold = setup.window
        ours_pipeline = ShieldPipeline(pre_dispatch=BudgetWindowHook(max_calls, 3600.0, threshold))
        ref_pipeline = RefPipeline(pre_dispatch=RefWindow(max_calls, 3600.0, threshold))
    ours_breaker = ref_breaker = None
    if setup.breaker_threshold is not None:
        ours_breaker = CircuitBreaker(setup.breaker_threshold, recovery_timeout=3600.0)
        ref_breaker = RefBreaker(failure_threshold=setup.breaker_threshold, recovery_timeout=3600.0)
    ours = ExecutionContext(ExecutionConfig(**limits), pipeline=ours_pipeline, circuit_breaker=ours_breaker)  # type: ignore[arg-type]
    ref = RefContext(RefConfig(**limits), pipeline=ref_pipeline, circuit_breaker=ref_breaker)  # type: ignore[arg-type]
    return ours, ref


def run_call(ctx: Any, options_type: Any, call: Call) -> Any:
    ours = isinstance(ctx, ExecutionContext)

    def fn() -> None:
        if ours and call.reports and not call.fails:
            report_cost(call.cost)  # settles at the actual cost, which equals the estimate here
        if call.fails:
            raise ConnectionError("provider failed")

    wrap = ctx.wrap_llm_call if call.kind == "llm" else ctx.wrap_tool_call
    return wrap(fn, options_type(operation_name=call.kind, cost_estimate_hint=call.cost))


def chain_events(snapshot: Any) -> set[str]:
    types = {e.event_type for e in snapshot.events if e.hook == "ExecutionContext"}
    return {t.removeprefix("CHAIN_").lower() for t in types}


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(setup=setups, sequence=calls)
def test_same_decisions_and_counters_as_the_reference(setup: Setup, sequence: list[Call]) -> None:
    ours, ref = build(setup)
    for call in sequence:
        if ref.get_snapshot().retries_used >= setup.max_retries_total:
            break  # the reference refuses everything from here on; ours does not (see above)
        if call.kind == "abort":
            ours.abort("stop requested")
            ref.abort("stop requested")
            continue
        mine = run_call(ours, WrapOptions, call)
        theirs = run_call(ref, RefOptions, call)
        a, b = ours.get_snapshot(), ref.get_snapshot()
        assert mine == theirs, (call, mine, theirs)
        assert (a.step_count, a.retries_used, a.aborted) == (b.step_count, b.retries_used, b.aborted)
        assert math.isclose(a.cost_usd_accumulated, b.cost_usd_accumulated, abs_tol=1e-12)
        assert a.abort_reason == b.abort_reason
    final_ours, final_ref = ours.get_snapshot(), ref.get_snapshot()
    # Same records in the same order; ours tells aborted refusals apart from other halts.
    mine_nodes = [(n.kind, n.operation_name, n.status.replace("aborted", "halted")) for n in final_ours.nodes]
    their_nodes = [(n.kind, n.operation_name, n.status) for n in final_ref.nodes]
    assert mine_nodes == their_nodes
    assert chain_events(final_ours) - OURS_ONLY == chain_events(final_ref)
    assert final_ours.graph_summary is not None and final_ref.graph_summary is not None
    for key in ("total_llm_calls", "total_tool_calls"):
        assert final_ours.graph_summary[key] == final_ref.graph_summary[key], key
    # The reference never tells its graph about retries; ours does, so the two views agree.
    assert final_ours.graph_summary["total_retries"] == final_ours.retries_used
