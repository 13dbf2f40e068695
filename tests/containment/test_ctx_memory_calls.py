"""Memory calls and memory governance (docs/containment.md "Memory calls and memory governance"): a memory
read or write is a step under every chain limit with its own node kind, skips the pipeline's pre-dispatch
hooks, and a memory governor (veronica-core's own, or any object with ``evaluate`` / ``notify_after``)
gates every call, failing closed."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest
from ctx_helpers import Calls, graph_node
from veronica_core.memory.governor import MemoryGovernor
from veronica_core.memory.hooks import DefaultMemoryGovernanceHook, DenyAllMemoryGovernanceHook

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.containment.memory import MemoryAction, MemoryOperation, MemoryPolicyContext
from chainwarden.shield import CircuitBreaker, Decision, ShieldPipeline, ToolCallContext


def ctx_with(max_steps: int = 10, **kwargs: Any) -> ExecutionContext:
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=max_steps, max_retries_total=3), **kwargs
    )


def test_memory_calls_are_steps_with_their_own_kind() -> None:
    ctx = ctx_with(max_steps=3)
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW
    assert ctx.wrap_memory_call(lambda: None, "memory_read", WrapOptions("recall")) is Decision.ALLOW
    assert ctx.wrap_memory_call(lambda: None, kind="memory_write") is Decision.ALLOW
    fn = Calls()
    assert ctx.wrap_memory_call(fn, "memory_read") is Decision.HALT  # the shared step budget is spent
    assert fn.count == 0
    snap = ctx.get_snapshot()
    assert [(n.kind, n.status) for n in snap.nodes] == [
        ("llm", "ok"),
        ("memory_read", "ok"),
        ("memory_write", "ok"),
        ("memory_read", "halted"),
    ]
    assert snap.step_count == 3
    node = graph_node(ctx, snap.nodes[1].node_id)
    assert (node["kind"], node["name"], node["status"]) == ("memory_read", "recall", "success")
    # The graph counts LLM and tool calls only (docs/design.md §1).
    assert (snap.graph_summary["total_llm_calls"], snap.graph_summary["total_tool_calls"]) == (1, 0)


@pytest.mark.parametrize("kind", ["memory", "llm", "", None, 3])
def test_a_kind_that_is_not_a_memory_kind_is_refused_before_anything_counts(kind: Any) -> None:
    ctx = ctx_with()
    fn = Calls()
    with pytest.raises(TypeError if not isinstance(kind, str) else ValueError, match="kind must be"):
        ctx.wrap_memory_call(fn, kind)
    assert fn.count == 0
    assert ctx.get_snapshot().nodes == []


class Hooks:
    """A pipeline that records which hooks saw which calls."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def before_llm_call(self, ctx: ToolCallContext) -> Decision:
        self.seen.append(f"before_llm_call {ctx.tool_name}")
        return Decision.HALT

    def before_tool_call(self, ctx: ToolCallContext) -> Decision:
        self.seen.append(f"before_tool_call {ctx.tool_name}")
        return Decision.HALT

    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision:
        self.seen.append(f"before_charge {ctx.tool_name}")
        return Decision.HALT

    def on_error(self, ctx: ToolCallContext, error: BaseException) -> Decision:
        self.seen.append(f"on_error {ctx.tool_name}")
        return Decision.RETRY

    def get_events(self) -> list[Any]:
        return []


def test_memory_calls_skip_the_pre_dispatch_hooks_but_not_on_error() -> None:
    hooks = Hooks()
    ctx = ctx_with(pipeline=hooks)
    # The hooks halt every LLM / tool call; memory calls never ask them, nor before_charge.
    assert ctx.wrap_tool_call(lambda: None, WrapOptions("search")) is Decision.HALT
    assert ctx.wrap_memory_call(lambda: None, "memory_write", WrapOptions("store", 0.1)) is Decision.ALLOW
    assert (
        ctx.wrap_memory_call(Calls(KeyError("gone")), "memory_read", WrapOptions("recall")) is Decision.RETRY
    )
    assert hooks.seen == ["before_tool_call search", "on_error recall"]
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.1)


def test_an_open_breaker_refuses_memory_calls_too() -> None:
    breaker = CircuitBreaker(failure_threshold=1, recovery_timeout=3600.0)
    ctx = ctx_with(circuit_breaker=breaker)
    assert ctx.wrap_memory_call(Calls(OSError("disk")), "memory_write") is Decision.RETRY
    fn = Calls()
    assert ctx.wrap_memory_call(fn, "memory_read") is Decision.HALT
    assert (fn.count, ctx.last_stop_reason) == (0, "circuit_open")


def test_async_memory_calls() -> None:
    async def main() -> tuple[Decision, Decision]:
        ctx = ctx_with(max_steps=1)

        async def read() -> str:
            await asyncio.sleep(0)
            return "remembered"

        first = await ctx.wrap_memory_call_async(read, "memory_read")
        return first, await ctx.wrap_memory_call_async(read, "memory_write")

    assert asyncio.run(main()) == (Decision.ALLOW, Decision.HALT)


def test_concurrent_memory_and_llm_calls_count_exactly() -> None:
    ctx = ctx_with(max_steps=100)
    barrier = threading.Barrier(8)

    def work(i: int) -> None:
        barrier.wait()
        for _ in range(10):
            if i % 2:
                ctx.wrap_memory_call(lambda: None, "memory_read")
            else:
                ctx.wrap_llm_call(lambda: None)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = ctx.get_snapshot()
    assert snap.step_count == 80
    assert sum(n.kind == "memory_read" for n in snap.nodes) == 40


# -- memory governance -----------------------------------------------------------------------------


def test_veronicas_deny_all_governor_refuses_every_call_before_it_runs() -> None:
    governor = MemoryGovernor(fail_closed=True)
    governor.add_hook(DenyAllMemoryGovernanceHook())
    ctx = ctx_with(memory_governor=governor)
    fn = Calls()
    assert ctx.wrap_memory_call(fn, "memory_write", WrapOptions("store")) is Decision.HALT
    assert ctx.wrap_llm_call(fn) is Decision.HALT
    assert fn.count == 0
    assert ctx.last_stop_reason == "memory_governance_denied"
    snap = ctx.get_snapshot()
    [event] = [e for e in snap.events if e.event_type == "memory_governance_denied"]
    assert event.decision is Decision.HALT
    assert "deny-all policy" in event.reason and "policy=deny_all" in event.reason
    assert graph_node(ctx, snap.nodes[0].node_id)["stop_reason"] == "memory_governance_denied"
    assert snap.step_count == 0 and not snap.aborted


def test_veronicas_allowing_governor_lets_calls_run() -> None:
    governor = MemoryGovernor(fail_closed=False)
    governor.add_hook(DefaultMemoryGovernanceHook())
    ctx = ctx_with(memory_governor=governor)
    fn = Calls()
    assert ctx.wrap_memory_call(fn, "memory_read") is Decision.ALLOW
    assert fn.count == 1


class Governor:
    """Records what it is asked and told; denies what ``deny`` names."""

    def __init__(self, deny: set[str] | None = None, error: Exception | None = None) -> None:
        self.deny = deny or set()
        self.error = error
        self.asked: list[tuple[MemoryOperation, MemoryPolicyContext]] = []
        self.told: list[tuple[MemoryOperation, Any]] = []

    def evaluate(self, operation: MemoryOperation, context: MemoryPolicyContext) -> Any:
        self.asked.append((operation, context))
        if self.error is not None:
            raise self.error
        denied = operation.metadata["operation_name"] in self.deny
        return type("Verdict", (), {"denied": denied, "reason": "listed", "policy_id": "list"})()

    def notify_after(self, operation: MemoryOperation, decision: Any) -> None:
        self.told.append((operation, decision))


def test_the_governor_is_asked_with_the_reference_operation_and_told_of_successes() -> None:
    from chainwarden.containment import ChainMetadata  # noqa: PLC0415

    governor = Governor(deny={"forbidden"})
    meta = ChainMetadata(request_id="req", chain_id="chain", user_id="alice")
    ctx = ctx_with(memory_governor=governor, metadata=meta)
    ctx.wrap_llm_call(lambda: None, WrapOptions("plan"))
    ctx.wrap_tool_call(lambda: None, WrapOptions("search"))
    ctx.wrap_memory_call(lambda: None, "memory_read", WrapOptions("recall"))
    ctx.wrap_memory_call(Calls(OSError("full")), "memory_write", WrapOptions("store"))
    assert ctx.wrap_memory_call(lambda: None, "memory_write", WrapOptions("forbidden")) is Decision.HALT
    actions = [(op.action, op.metadata["kind"]) for op, _ in governor.asked]
    assert actions == [
        (MemoryAction.WRITE, "llm"),
        (MemoryAction.READ, "tool"),
        (MemoryAction.READ, "memory_read"),
        (MemoryAction.WRITE, "memory_write"),
        (MemoryAction.WRITE, "memory_write"),
    ]
    op, context = governor.asked[2]
    assert (op.agent_id, op.namespace, op.content_size_bytes) == ("alice", "chain", 0)
    assert (context.chain_id, context.request_id, context.total_memory_ops_in_chain) == ("chain", "req", 2)
    assert op.action == "read"  # the reference's values: hooks comparing with == read them unchanged
    # Told of the three successes only (not the failure, not the denial), with their own operation.
    assert [op.metadata["operation_name"] for op, _ in governor.told] == ["plan", "search", "recall"]


def test_a_governor_that_raises_or_answers_nothing_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    for governor in (Governor(error=RuntimeError("policy store down")), NoneGovernor()):
        ctx = ctx_with(memory_governor=governor)
        fn = Calls()
        with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
            assert ctx.wrap_memory_call(fn, "memory_write") is Decision.HALT
        assert fn.count == 0
        assert ctx.last_stop_reason == "memory_governance_denied"
        assert ctx.reserved_usd == 0.0
    assert "policy store down" in caplog.text and "returned None" in caplog.text


class NoneGovernor:
    def evaluate(self, operation: Any, context: Any) -> None:
        return None

    def notify_after(self, operation: Any, decision: Any) -> None:
        raise AssertionError("never told")


def test_a_failing_notify_after_leaves_the_call_successful(caplog: pytest.LogCaptureFixture) -> None:
    class Noisy(Governor):
        def notify_after(self, operation: MemoryOperation, decision: Any) -> None:
            raise RuntimeError("audit sink down")

    ctx = ctx_with(memory_governor=Noisy())
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.wrap_memory_call(lambda: None, "memory_read") is Decision.ALLOW
    assert ctx.get_snapshot().step_count == 1
    assert "notify_after() raised" in caplog.text


def test_a_governor_without_its_methods_is_refused_at_construction() -> None:
    with pytest.raises(TypeError, match="memory_governor must provide a callable notify_after"):
        ctx_with(memory_governor=type("Half", (), {"evaluate": lambda self, op, ctx: None})())


def test_children_inherit_the_governor() -> None:
    governor = Governor(deny={"x"})
    parent = ctx_with(memory_governor=governor)
    for child in (parent.spawn_child(), parent.create_child("a", ["a", "b"])):
        assert child.wrap_memory_call(lambda: None, "memory_write", WrapOptions("x")) is Decision.HALT
    assert len(governor.asked) == 2


def test_a_pipeline_with_the_governor_still_halts_llm_calls_first() -> None:
    governor = Governor()
    ctx = ctx_with(memory_governor=governor, pipeline=ShieldPipeline(pre_dispatch=Hooks()))
    assert ctx.wrap_llm_call(lambda: None) is Decision.HALT
    assert ctx.last_stop_reason == "pipeline_halt"
    assert governor.asked == []  # the reference's order: pipeline, breaker, then the governor
