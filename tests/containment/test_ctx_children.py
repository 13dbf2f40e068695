"""Child contexts: their successful costs propagate to the parent chain."""

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision


def parent_ctx(max_cost_usd: float = 1.0) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=20, max_retries_total=4))


def test_spawn_child_defaults_to_remaining_budget_and_propagates_cost() -> None:
    parent = parent_ctx()
    parent.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.25))
    with parent.spawn_child() as child:
        assert child.config.max_cost_usd == 0.75
        assert child.config.max_steps == 20
        assert child.parent is parent
        assert child.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.5)) is Decision.ALLOW
    snap = parent.get_snapshot()
    assert snap.cost_usd_accumulated == 0.75
    assert snap.step_count == 1  # steps stay per chain
    assert child.get_snapshot().parent_chain_id == parent.metadata.chain_id


def test_child_spending_can_exhaust_the_parent() -> None:
    parent = parent_ctx(max_cost_usd=0.5)
    child = parent.spawn_child(max_cost_usd=10.0)
    assert child.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.5)) is Decision.ALLOW
    assert parent.cancellation_token.is_cancelled
    assert parent.wrap_llm_call(lambda: None) is Decision.HALT
    events = [e for e in parent.get_snapshot().events if e.hook == "ExecutionContext"]
    # The stop itself, then the refusal of the parent's next call.
    assert [e.event_type for e in events] == ["budget_exceeded", "budget_exceeded"]
    assert events[0].metadata["source"] == "child"
    assert "source" not in events[1].metadata


def test_grandchild_cost_reaches_every_ancestor() -> None:
    root = parent_ctx(max_cost_usd=10.0)
    child = root.spawn_child(max_cost_usd=5.0)
    grandchild = child.spawn_child(max_cost_usd=2.0)
    grandchild.wrap_tool_call(lambda: None, WrapOptions(cost_estimate_hint=1.5))
    assert grandchild.get_snapshot().cost_usd_accumulated == 1.5
    assert child.get_snapshot().cost_usd_accumulated == 1.5
    assert root.get_snapshot().cost_usd_accumulated == 1.5


def test_create_child_splits_the_remaining_budget() -> None:
    parent = parent_ctx(max_cost_usd=0.9)
    child = parent.create_child("planner", ["planner", "coder", "critic"])
    assert child.config.max_cost_usd == pytest.approx(0.3)

    class Weighted:
        def allocate(
            self, total_budget: float, agent_names: list[str], current_usage: dict[str, float]
        ) -> object:
            class Result:
                def __init__(self) -> None:
                    self.allocations = {"planner": total_budget * 0.75, "coder": total_budget * 0.25}

            return Result()

    weighted = parent.create_child("planner", ["planner", "coder"], allocator=Weighted())
    assert weighted.config.max_cost_usd == pytest.approx(0.675)
