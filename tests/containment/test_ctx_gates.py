"""Pipeline and breaker gates: verdicts forwarded, nodes closed, reservations released."""

import logging
from typing import Any

import pytest
from ctx_helpers import Calls, graph_node
from veronica_core.circuit_breaker import CircuitBreaker as RefBreaker
from veronica_core.shield.pipeline import ShieldPipeline as RefPipeline

from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision, ShieldPipeline, ToolCallContext


def config(max_steps: int = 10) -> ExecutionConfig:
    return ExecutionConfig(max_cost_usd=1.0, max_steps=max_steps, max_retries_total=5)


class Answer:
    def __init__(self, decision: Decision | None) -> None:
        self.decision = decision
        self.contexts: list[ToolCallContext] = []

    def before_llm_call(self, ctx: ToolCallContext) -> Decision | None:
        self.contexts.append(ctx)
        return self.decision

    def before_tool_call(self, ctx: ToolCallContext) -> Decision | None:
        self.contexts.append(ctx)
        return self.decision

    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision | None:
        self.contexts.append(ctx)
        return self.decision


def test_pipeline_verdict_is_forwarded_and_node_halted() -> None:
    hook = Answer(Decision.DEGRADE)
    meta = ChainMetadata(request_id="r", chain_id="c", team="ml", tags={"env": "prod"}, user_id="u1")
    ctx = ExecutionContext(config(), pipeline=ShieldPipeline(pre_dispatch=hook), metadata=meta)
    fn = Calls()
    assert ctx.wrap_llm_call(fn, WrapOptions("plan")) is Decision.DEGRADE
    assert fn.count == 0
    [tctx] = hook.contexts
    assert (tctx.request_id, tctx.user_id, tctx.tool_name) == ("r", "u1", "plan")
    assert tctx.metadata == {"chain_id": "c", "org_id": "", "team": "ml", "service": "", "env": "prod"}
    rec = ctx.get_snapshot().nodes[-1]
    assert tctx.session_id == rec.node_id
    assert graph_node(ctx, rec.node_id)["stop_reason"] == "pipeline_halt"
    assert any(e.hook == "Answer" for e in ctx.get_snapshot().events)


def test_tool_calls_use_the_tool_hook() -> None:
    llm, tool = Answer(None), Answer(Decision.HALT)
    ctx = ExecutionContext(config(), pipeline=ShieldPipeline(pre_dispatch=llm, tool_dispatch=tool))
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW
    assert ctx.wrap_tool_call(lambda: None) is Decision.HALT
    assert (len(llm.contexts), len(tool.contexts)) == (1, 1)


def test_before_charge_can_refuse_the_cost() -> None:
    charge = Answer(Decision.HALT)
    ctx = ExecutionContext(config(), pipeline=ShieldPipeline(budget=charge))
    assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.25)) is Decision.HALT
    assert ctx.wrap_tool_call(lambda: None, WrapOptions(cost_estimate_hint=0.25)) is Decision.ALLOW
    snap = ctx.get_snapshot()
    assert snap.cost_usd_accumulated == 0.25  # only the tool call was charged
    assert [charge.contexts[0].cost_usd] == [0.25]
    assert graph_node(ctx, snap.nodes[0].node_id)["stop_reason"] == "before_charge_halt"


def test_pipeline_without_retry_hook_halts_failures() -> None:
    ctx = ExecutionContext(config(), pipeline=ShieldPipeline())
    assert ctx.wrap_llm_call(Calls(ValueError("bad"))) is Decision.HALT
    snap = ctx.get_snapshot()
    assert snap.retries_used == 0
    assert graph_node(ctx, snap.nodes[-1].node_id)["stop_reason"] == "pipeline_halt"
    assert any(e.event_type == "RETRY_POLICY_APPLIED" for e in snap.events)


def test_raising_hook_releases_the_step_reservation(caplog: pytest.LogCaptureFixture) -> None:
    # A pipeline whose hook raises (here one overriding ShieldPipeline's own guard) fails closed:
    # logged, HALT, the callable never runs, and nothing stays reserved (docs/design.md §22).
    class Broken(ShieldPipeline):
        def before_llm_call(self, ctx: ToolCallContext) -> Decision:
            raise RuntimeError("hook bug")

    ran: list[int] = []
    ctx = ExecutionContext(config(max_steps=1), pipeline=Broken())
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.wrap_llm_call(lambda: ran.append(1)) is Decision.HALT
    assert ran == []
    assert "hook bug" in caplog.text
    snap = ctx.get_snapshot()
    assert snap.nodes[-1].status == "error"
    assert ctx._s.core.in_flight == 0


def test_reference_pipeline_and_breaker_are_accepted() -> None:
    breaker = RefBreaker(failure_threshold=1, recovery_timeout=3600.0)
    ctx = ExecutionContext(config(), pipeline=RefPipeline(), circuit_breaker=breaker)
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW
    assert ctx.wrap_llm_call(Calls(OSError())) is Decision.HALT  # reference pipeline fails closed
    assert ctx.wrap_llm_call(lambda: None) is Decision.HALT  # breaker is open now
    events = {e.event_type for e in ctx.get_snapshot().events if e.hook == "ExecutionContext"}
    assert events == {"circuit_open"}


def test_metrics_receive_costs_and_decisions() -> None:
    seen: list[tuple[str, Any]] = []

    class Metrics:
        def record_cost(self, chain_id: str, cost: float) -> None:
            seen.append(("cost", cost))

        def record_decision(self, chain_id: str, decision: str) -> None:
            seen.append(("decision", decision))

    ctx = ExecutionContext(config(max_steps=1), metrics=Metrics())
    ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.5))
    ctx.wrap_llm_call(lambda: None)
    assert seen == [("cost", 0.5), ("decision", "ALLOW"), ("decision", "HALT")]


def test_raising_on_error_or_before_charge_closes_the_call(caplog: pytest.LogCaptureFixture) -> None:
    class Raises(ShieldPipeline):
        def on_error(self, ctx: ToolCallContext, err: BaseException) -> Decision:
            raise RuntimeError("retry hook bug")

        def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision:
            raise RuntimeError("budget hook bug")

    ctx = ExecutionContext(config(), pipeline=Raises())
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.wrap_llm_call(Calls(ValueError())) is Decision.HALT
        assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.5)) is Decision.HALT
    assert "retry hook bug" in caplog.text
    assert "budget hook bug" in caplog.text
    snap = ctx.get_snapshot()
    assert [n.status for n in snap.nodes] == ["error", "error"]
    assert (snap.step_count, snap.retries_used, snap.cost_usd_accumulated) == (0, 0, 0.0)
    assert ctx._s.core.in_flight == 0
    # The estimate reservation was released too: a call using the whole budget still fits.
    assert ctx.wrap_tool_call(lambda: None, WrapOptions(cost_estimate_hint=1.0)) is Decision.ALLOW
