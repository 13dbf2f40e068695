"""Thresholds and limits of the recorder exactly at, just under and just over each boundary (docs/testing.md
"Boundary tests"): divergence rates and repeat counts, pruning at `max_nodes`, ids past six digits."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from chainwarden import ExecutionGraph

# A start time in the future (2100-01-01): the core clamps a call's duration to at least 1 ms
# (docs/recorder.md "Loading a snapshot": a loaded snapshot may carry any start time), so a call loaded
# with this start lasts exactly 1 ms whatever the clock says, and its rates are exact: cost * 1000 USD/s
# and tokens * 1000 tokens/s.
FUTURE_MS = 4_102_444_800_000


def node(node_id: str, parent: str | None, kind: str, status: str, start_ms: int) -> dict[str, Any]:
    return {
        "node_id": node_id,
        "parent_id": parent,
        "kind": kind,
        "name": "root" if parent is None else "call",
        "start_ts_ms": start_ms,
        "end_ts_ms": None if status in ("created", "running") else start_ms,
        "status": status,
        "model": None,
        "retries_used": 0,
        "cost_usd": 0.0,
        "tokens_in": None,
        "tokens_out": None,
        "stop_reason": None,
        "error_class": None,
        "metadata": {},
    }


def snapshot(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {
        "chain_id": "boundaries",
        "root_id": nodes[0]["node_id"],
        "nodes": {n["node_id"]: n for n in nodes},
        "aggregates": {
            "total_cost_usd": 0.0,
            "total_llm_calls": 0,
            "total_tool_calls": 0,
            "total_retries": 0,
            "max_depth": 1,
            "llm_calls_per_root": 0.0,
            "tool_calls_per_root": 0.0,
            "retries_per_root": 0.0,
            "divergence_emitted_count": 0,
            "total_tokens_out": 0,
        },
        "snapshot_ts_ms": 0,
    }


def one_ms_call(**thresholds: float) -> tuple[ExecutionGraph, str]:
    """A graph whose running llm call `n000002` will have lasted exactly 1 ms when it completes."""
    saved = snapshot(
        node("n000001", None, "system", "created", 0), node("n000002", "n000001", "llm", "running", FUTURE_MS)
    )
    return ExecutionGraph.from_snapshot(saved, **thresholds), "n000002"


def just_under(x: float) -> float:
    return math.nextafter(x, 0.0)


def just_over(x: float) -> float:
    return math.nextafter(x, math.inf)


# --- divergence: cost rate and token velocity ------------------------------------------------------------

RATE = 250.0  # 0.25 USD in 1 ms


@pytest.mark.parametrize(
    ("threshold", "fires"),
    # The rate is just over, exactly at and just under the threshold: only "above" fires (docs/recorder.md).
    [(just_under(RATE), True), (RATE, False), (just_over(RATE), False)],
)
def test_cost_rate_threshold(threshold: float, fires: bool) -> None:
    g, call = one_ms_call(cost_rate_threshold_usd_per_sec=threshold)
    g.mark_success(call, 0.25)
    events = g.drain_divergence_events()
    if fires:
        [event] = events
        assert event["event_type"] == "COST_RATE_EXCEEDED"
        assert (event["cost_rate"], event["threshold"]) == (RATE, threshold)
        assert g.aggregates()["divergence_emitted_count"] == 1
    else:
        assert events == []
        assert g.aggregates()["divergence_emitted_count"] == 0


VELOCITY = 4000.0  # 4 output tokens in 1 ms


@pytest.mark.parametrize(
    ("threshold", "fires"),
    [(just_under(VELOCITY), True), (VELOCITY, False), (just_over(VELOCITY), False)],
)
def test_token_velocity_threshold(threshold: float, fires: bool) -> None:
    g, call = one_ms_call(token_velocity_threshold=threshold)
    g.mark_success(call, 0.0, tokens_out=4)
    events = g.drain_divergence_events()
    if fires:
        [event] = events
        assert event["event_type"] == "TOKEN_VELOCITY_EXCEEDED"
        assert (event["token_velocity"], event["threshold"]) == (VELOCITY, threshold)
    else:
        assert events == []


def test_a_zero_cost_call_never_fires_the_cost_rate() -> None:
    g, call = one_ms_call(cost_rate_threshold_usd_per_sec=just_under(1e-300))
    g.mark_success(call, 0.0)
    assert g.drain_divergence_events() == []


# --- divergence: repeated signatures -------------------------------------------------------------------


def dispatch(g: ExecutionGraph, root: str, kind: str, names: str) -> list[dict[str, Any]]:
    """Dispatches one call per letter of `names` and returns the events it raised."""
    for name in names:
        g.begin_node(root, kind, name, running=True)  # type: ignore[arg-type]
    return g.drain_divergence_events()


def patterns(events: list[dict[str, Any]]) -> list[tuple[str, list[str], int]]:
    return [(e["detection_mode"], e["signature"], e["repeat_count"]) for e in events]


# docs/recorder.md "Divergence detection": back to back x3 for tool/memory, x5 for llm.
@pytest.mark.parametrize(
    ("kind", "threshold"), [("tool", 3), ("memory_read", 3), ("memory_write", 3), ("llm", 5)]
)
@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_consecutive_repeats(kind: str, threshold: int, offset: int) -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    found = patterns(dispatch(g, root, kind, "a" * (threshold + offset)))
    assert found == ([] if offset < 0 else [("consecutive", [kind, "a"], threshold)])


# Within the window of 8, never 3 (tool) / 5 (llm) back to back: x5 for tool/memory, x7 for llm.
@pytest.mark.parametrize(
    ("kind", "sequence", "count"),
    [("tool", "aabaaba", 5), ("memory_write", "aabaaba", 5), ("llm", "aaaabaaa", 7)],
)
@pytest.mark.parametrize("offset", [-1, 0, 1])
def test_frequency_within_the_window(kind: str, sequence: str, count: int, offset: int) -> None:
    names = {-1: sequence[:-1], 0: sequence, 1: sequence + "b"}[offset]
    g = ExecutionGraph()
    root = g.create_root("run")
    found = patterns(dispatch(g, root, kind, names))
    assert names.count("a") == (count - 1 if offset < 0 else count)
    assert found == ([] if offset < 0 else [("frequency", [kind, "a"], count)])


def test_frequency_counts_only_the_last_eight_dispatches() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    # The fifth "a" comes when the first has left the window of eight: four of the last eight.
    assert patterns(dispatch(g, root, "tool", "abbcaabaa")) == []
    # Two more dispatches: now five "a" among the last eight.
    assert patterns(dispatch(g, root, "tool", "ba")) == [("frequency", ["tool", "a"], 5)]


def test_system_calls_never_diverge() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    assert dispatch(g, root, "system", "a" * 9) == []


# --- pruning exactly at max_nodes ------------------------------------------------------------------------

MAX_NODES = 4


@pytest.mark.parametrize("inserted", [MAX_NODES - 1, MAX_NODES, MAX_NODES + 1])
def test_pruning_starts_only_past_max_nodes(inserted: int) -> None:
    """`inserted` nodes in all, the root included, every call finished: the graph holds at most
    `max_nodes`, and only an insert into a full graph evicts (the oldest finished call)."""
    g = ExecutionGraph(max_nodes=MAX_NODES)
    root = g.create_root("run")
    calls = []
    for i in range(inserted - 1):
        calls.append(g.begin_node(root, "tool", f"t{i}"))
        g.mark_success(calls[-1], 0.0)
    evicted = max(0, inserted - MAX_NODES)
    assert g.pruned_count == evicted
    assert len(g) == min(inserted, MAX_NODES)
    assert list(g.snapshot()["nodes"]) == [root, *calls[evicted:]]
    assert g.aggregates()["total_tool_calls"] == inserted - 1


def test_max_nodes_one_keeps_only_the_root_and_the_newest() -> None:
    g = ExecutionGraph(max_nodes=1)
    root = g.create_root("run")
    first = g.begin_node(root, "tool", "a")
    g.mark_success(first, 0.0)
    second = g.begin_node(root, "tool", "b")
    assert list(g.snapshot()["nodes"]) == [root, second]
    assert g.pruned_count == 1


# --- ids across the six-digit padding ----------------------------------------------------------------------


def test_ids_cross_a_million_through_the_python_api() -> None:
    """A loaded snapshot whose highest id is n999999 continues at n1000000: the padding stops at six digits
    and the longer ids work everywhere an id is taken or given back."""
    saved = snapshot(
        node("n000001", None, "system", "created", 1),
        node("n999999", "n000001", "tool", "success", 1),
    )
    g = ExecutionGraph.from_snapshot(saved)
    seven = g.begin_node("n999999", "llm", "plan", running=True)
    assert seven == "n1000000"
    eight = g.begin_node(seven, "tool", "search")
    assert eight == "n1000001"
    g.mark_success(seven, 0.5, tokens_out=3)
    g.mark_failure(eight, "TimeoutError")
    assert seven in g and eight in g and "n01000000" not in g and "n100000" not in g
    assert (g.node(eight)["parent_id"], g.node(eight)["status"]) == (seven, "fail")
    assert list(g.snapshot()["nodes"]) == ["n000001", "n999999", seven, eight]
    doc = json.loads(g.snapshot_json())
    assert doc["nodes"][seven]["node_id"] == seven
    again = ExecutionGraph.from_snapshot(g.snapshot_json())
    assert again.begin_node(eight, "tool", "next") == "n1000002"
    assert again.snapshot()["nodes"][seven] == g.snapshot()["nodes"][seven]
    # Spellings that are not ids the recorder gives out stay unknown.
    for wrong in ("n0999999", "n01000000", "n1000000 ", "n999999x"):
        with pytest.raises(KeyError):
            g.node(wrong)
