"""The API beyond the reference: running=True, aggregates(), node(), len, snapshot_json()."""

from __future__ import annotations

import json
import re
from typing import Any

import hypothesis.strategies as st
from hypothesis import given, settings

from chainwarden import ExecutionGraph, containment

TS = re.compile(rb'"(start_ts_ms|end_ts_ms|snapshot_ts_ms)": (\d+|null)')


def strip_ts(b: bytes) -> bytes:
    return TS.sub(b"", b)


def build() -> ExecutionGraph:
    g = ExecutionGraph(chain_id='chain "quoted" ü')
    root = g.create_root("agent_run", metadata={"request_id": "req-001", "nested": {"t": (1, 2.5, None)}})
    plan = g.begin_node(root, "llm", "plan\tstep", model="claude-sonnet-4-6", running=True)
    g.mark_success(plan, cost_usd=0.0042, tokens_in=120, tokens_out=80)
    tool = g.begin_node(plan, "tool", "web_search", metadata={"query": "VERONICA 😀", "n": [1e-05, 1e16]})
    g.mark_running(tool)
    g.increment_retries(tool)
    g.mark_failure(tool, error_class="TimeoutError", stop_reason="slow\nprovider")
    halted = g.begin_node(root, "llm", "step_2")
    g.mark_halt(halted, stop_reason="cost ceiling exceeded")
    g.begin_node(root, "memory_read", "recall")
    return g


def test_both_import_paths_give_the_native_class() -> None:
    assert containment.ExecutionGraph is ExecutionGraph
    assert ExecutionGraph.__module__ == "chainwarden._core"


def test_snapshot_json_is_identical_to_json_dumps_of_snapshot() -> None:
    g = build()
    ours = g.snapshot_json()
    via_python = json.dumps(g.snapshot()).encode()
    assert strip_ts(ours) == strip_ts(via_python)
    assert json.loads(ours)["nodes"]["n000003"]["metadata"]["query"] == "VERONICA 😀"


def test_snapshot_shape_and_aggregate_keys_in_order() -> None:
    snap = build().snapshot()
    assert list(snap) == ["chain_id", "root_id", "nodes", "aggregates", "snapshot_ts_ms"]
    assert list(snap["aggregates"]) == [
        "total_cost_usd",
        "total_llm_calls",
        "total_tool_calls",
        "total_retries",
        "max_depth",
        "llm_calls_per_root",
        "tool_calls_per_root",
        "retries_per_root",
        "divergence_emitted_count",
        "total_tokens_out",
    ]
    agg = snap["aggregates"]
    assert agg["total_llm_calls"] == 2  # success + halt
    assert agg["total_tool_calls"] == 1  # fail counts
    assert agg["total_retries"] == 1
    assert agg["max_depth"] == 2
    assert isinstance(agg["llm_calls_per_root"], float)
    assert snap["nodes"]["n000001"]["metadata"]["nested"]["t"] == (1, 2.5, None)


def test_snapshot_is_a_deep_copy() -> None:
    g = build()
    snap = g.snapshot()
    snap["nodes"]["n000001"]["metadata"]["nested"]["t"] = "changed"
    snap["nodes"]["n000002"]["status"] = "fail"
    again = g.snapshot()
    assert again["nodes"]["n000001"]["metadata"]["nested"]["t"] == (1, 2.5, None)
    assert again["nodes"]["n000002"]["status"] == "success"


def test_metadata_is_copied_at_begin() -> None:
    g = ExecutionGraph()
    meta: dict[str, Any] = {"tags": ["a"]}
    root = g.create_root("r", metadata=meta)
    meta["tags"].append("b")
    assert g.node(root)["metadata"] == {"tags": ["a"]}


def test_aggregates_equals_snapshot_aggregates() -> None:
    g = build()
    assert g.aggregates() == g.snapshot()["aggregates"]


def test_node_lookup_and_len_and_contains() -> None:
    g = build()
    assert len(g) == 5
    n = g.node("n000003")
    assert n == g.snapshot()["nodes"]["n000003"]
    assert n["status"] == "fail" and n["error_class"] == "TimeoutError" and n["retries_used"] == 1
    assert "n000003" in g and "n000009" not in g and 3 not in g
    assert g.root_id == "n000001"


def test_running_flag_is_begin_plus_mark_running() -> None:
    calls: list[tuple[str, str]] = []

    class Obs:
        def on_node_start(self, node_id: str, operation: str, metadata: dict[str, Any]) -> None:
            calls.append((node_id, operation))

    g = ExecutionGraph(observers=[Obs()])
    root = g.create_root("r")
    for _ in range(3):
        n = g.begin_node(root, "tool", "search", running=True)
        assert g.node(n)["status"] == "running"
    assert calls == [("n000002", "search"), ("n000003", "search"), ("n000004", "search")]
    events = g.drain_divergence_events()
    assert [e["detection_mode"] for e in events] == ["consecutive"]
    assert events[0]["signature"] == ["tool", "search"]


def test_halt_without_reason_records_halt() -> None:
    g = ExecutionGraph()
    root = g.create_root("r")
    n = g.begin_node(root, "llm", "x")
    g.mark_halt(n)
    assert g.node(n)["stop_reason"] == "halt"
    assert g.node(n)["end_ts_ms"] is not None


def test_repr_mentions_counts() -> None:
    g = build()
    assert "nodes=5" in repr(g) and "llm_calls=2" in repr(g)


@settings(max_examples=300, deadline=None)
@given(
    # NaN/inf metadata is rejected (docs/design.md §23; see test_strict_json.py).
    meta_value=st.one_of(
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(),
        st.integers(-(2**63), 2**63 - 1),
        st.booleans(),
    ),
    cost=st.floats(min_value=0, allow_infinity=False),
    name=st.text(min_size=1),
)
def test_snapshot_json_matches_json_dumps_for_any_value(meta_value: Any, cost: float, name: str) -> None:
    g = ExecutionGraph(chain_id=name)
    root = g.create_root(name, metadata={name: meta_value, "list": [meta_value, (meta_value,)]})
    g.mark_success(g.begin_node(root, "tool", name, model=name), cost, tokens_out=3)
    g.mark_failure(g.begin_node(root, "llm", "x"), name, stop_reason=name)
    assert strip_ts(g.snapshot_json()) == strip_ts(json.dumps(g.snapshot()).encode())


def test_neighbouring_nodes_do_not_leak_fields_into_each_other() -> None:
    # snapshot() builds each node's dict from its predecessor's; every differing field,
    # including ones that go back to None, must be rewritten.
    g = ExecutionGraph()
    root = g.create_root("r")
    a = g.begin_node(root, "llm", "a", model="m", metadata={"k": [1]}, running=True)
    g.increment_retries(a)
    g.mark_success(a, 0.5, tokens_in=3, tokens_out=4)
    b = g.begin_node(a, "tool", "b")
    g.mark_failure(b, "E", stop_reason="boom")
    c = g.begin_node(root, "llm", "a")
    nodes = g.snapshot()["nodes"]
    assert nodes[c] == g.node(c)
    assert (nodes[c]["model"], nodes[c]["tokens_in"], nodes[c]["end_ts_ms"], nodes[c]["stop_reason"]) == (
        None,
        None,
        None,
        None,
    )
    assert (nodes[c]["error_class"], nodes[c]["parent_id"], nodes[c]["retries_used"]) == (None, root, 0)
    assert nodes[c]["metadata"] == {} and nodes[c]["metadata"] is not nodes[b]["metadata"]
    assert nodes[b]["metadata"] == {} and nodes[a]["metadata"] == {"k": [1]}
    assert (nodes[b]["stop_reason"], nodes[b]["cost_usd"], nodes[b]["tokens_out"]) == ("boom", 0.0, None)
