"""Nested wraps become child nodes; snapshots are immutable views."""

import asyncio
import json
from datetime import UTC

import pytest
from ctx_helpers import graph_node

from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision, SafetyEvent


def make() -> ExecutionContext:
    meta = ChainMetadata(request_id="req", chain_id="chain", model="gpt-4o", tags={"env": "test"})
    return ExecutionContext(
        ExecutionConfig(max_cost_usd=5.0, max_steps=50, max_retries_total=5), metadata=meta
    )


def test_nested_wraps_are_children_in_graph_and_records() -> None:
    ctx = make()

    def plan() -> None:
        ctx.wrap_tool_call(lambda: None, WrapOptions("search"))
        ctx.wrap_tool_call(lambda: None, WrapOptions("fetch"))

    assert ctx.wrap_llm_call(plan, WrapOptions("plan", 0.5)) is Decision.ALLOW
    ctx.wrap_llm_call(lambda: None, WrapOptions("answer"))
    snap = ctx.get_snapshot()
    names = [n.operation_name for n in snap.nodes]
    assert names == ["search", "fetch", "plan", "answer"]  # completion order
    by_name = {n.operation_name: n for n in snap.nodes}
    assert by_name["search"].parent_id == by_name["plan"].node_id
    assert by_name["answer"].parent_id is None
    graph = ctx.get_graph_snapshot()
    root = graph["root_id"]
    assert graph_node(ctx, by_name["plan"].node_id)["parent_id"] == root
    assert graph_node(ctx, by_name["fetch"].node_id)["parent_id"] == by_name["plan"].node_id
    assert graph_node(ctx, by_name["plan"].node_id)["model"] == "gpt-4o"
    assert graph_node(ctx, by_name["search"].node_id)["model"] is None
    assert snap.graph_summary is not None and snap.graph_summary["max_depth"] == 2


def test_snapshot_is_frozen_at_its_instant() -> None:
    ctx = make()
    ctx.wrap_llm_call(lambda: None, WrapOptions("one", 0.25))
    before = ctx.get_snapshot()
    ctx.wrap_llm_call(lambda: None, WrapOptions("two", 0.25))
    after = ctx.get_snapshot()
    assert (before.step_count, len(before.nodes)) == (1, 1)
    assert (after.step_count, len(after.nodes)) == (2, 2)
    assert before.nodes[0] == after.nodes[0]
    assert before.nodes[-1].operation_name == "one"
    with pytest.raises(IndexError):
        before.nodes[1]
    assert list(after.nodes[::-1]) == [after.nodes[1], after.nodes[0]]
    assert after.nodes[0:2] == tuple(after.nodes)
    assert after.nodes == list(after.nodes)


def test_node_record_fields() -> None:
    ctx = make()
    ctx.wrap_llm_call(lambda: None, WrapOptions("step", 0.5))
    [rec] = ctx.get_snapshot().nodes
    assert rec.kind == "llm"
    assert rec.status == "ok"
    assert rec.cost_usd == 0.5
    assert rec.retries_used == 0
    assert rec.start_ts.tzinfo is UTC
    assert rec.end_ts is not None and rec.end_ts >= rec.start_ts


def test_record_event_is_deduplicated_and_in_snapshot() -> None:
    ctx = make()
    event = SafetyEvent(
        event_type="CUSTOM", decision=Decision.DEGRADE, reason="r", hook="App", request_id="req"
    )
    ctx.record_event(event)
    ctx.record_event(event)
    assert ctx.get_snapshot().events == (event,)


def test_snapshot_metadata_fields() -> None:
    ctx = make()
    snap = ctx.get_snapshot()
    assert (snap.chain_id, snap.request_id, snap.parent_chain_id) == ("chain", "req", None)
    assert snap.elapsed_ms >= 0
    assert not snap.aborted and snap.abort_reason is None


def test_async_calls_inside_a_sync_call_nest_at_the_right_depth() -> None:
    ctx = make()

    def sync_outer() -> None:
        async def main() -> None:
            async def async_middle() -> None:
                ctx.wrap_tool_call(lambda: None, WrapOptions("sync-inner"))

                async def leaf() -> None:
                    return None

                await ctx.wrap_tool_call_async(leaf, WrapOptions("async-inner"))

            await ctx.wrap_llm_call_async(async_middle, WrapOptions("async-middle"))

        asyncio.run(main())

    assert ctx.wrap_llm_call(sync_outer, WrapOptions("sync-outer")) is Decision.ALLOW
    by_name = {n.operation_name: n for n in ctx.get_snapshot().nodes}
    assert by_name["sync-outer"].parent_id is None
    assert by_name["async-middle"].parent_id == by_name["sync-outer"].node_id
    assert by_name["sync-inner"].parent_id == by_name["async-middle"].node_id
    assert by_name["async-inner"].parent_id == by_name["async-middle"].node_id


def test_graph_snapshot_json_matches_the_dict() -> None:
    ctx = make()
    ctx.wrap_llm_call(lambda: None, WrapOptions("a", 0.25))
    ctx.wrap_tool_call(lambda: None)
    graph = json.loads(ctx.get_graph_snapshot_json())
    as_dict = ctx.get_graph_snapshot()
    # Everything but the moment each snapshot was taken.
    assert graph.pop("snapshot_ts_ms") <= as_dict.pop("snapshot_ts_ms")
    assert graph == as_dict
    assert graph["chain_id"] == "chain"
    assert graph["nodes"][graph["root_id"]]["name"] == "chain_root"
    assert graph["aggregates"]["total_cost_usd"] == 0.25


def test_repr_shows_the_counters() -> None:
    ctx = make()
    ctx.wrap_llm_call(lambda: None, WrapOptions("a", 0.25))
    assert repr(ctx) == "<ExecutionContext chain_id='chain' steps=1 cost_usd=0.2500 retries=0 aborted=False>"
