"""`ExecutionGraph.from_snapshot` and the `root_id` / `_root_id` attributes."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from chainwarden import ExecutionGraph

from ._state import without_snapshot_ts

names = st.text(max_size=12)
meta_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | names,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(names, inner, max_size=3),
    max_leaves=8,
)
ops = st.lists(
    st.tuples(
        st.sampled_from(["begin", "begin_running", "running", "success", "failure", "halt", "retry"]),
        st.integers(0, 30),
        st.sampled_from(["llm", "tool", "system", "memory_read", "memory_write"]),
        names,
        st.one_of(st.none(), st.dictionaries(names, meta_values, max_size=3)),
        st.floats(0, 5, allow_nan=False),
        st.one_of(st.none(), st.integers(0, 10**6)),
    ),
    max_size=40,
)


def build(max_nodes: int, steps: list[tuple[Any, ...]]) -> ExecutionGraph:
    g = ExecutionGraph(chain_id="chain-ü", max_nodes=max_nodes)
    ids = [g.create_root("run", metadata={"request": "r-1"})]
    for op, pick, kind, name, meta, cost, tokens in steps:
        target = ids[pick % len(ids)]
        if target not in g:
            continue
        if op in ("begin", "begin_running"):
            ids.append(
                g.begin_node(
                    target, kind, name, model=name or None, metadata=meta, running=op == "begin_running"
                )
            )
        elif op == "running":
            g.mark_running(target)
        elif op == "success":
            g.mark_success(target, cost, tokens_in=tokens, tokens_out=tokens)
        elif op == "failure":
            g.mark_failure(target, name or "Error", stop_reason=name or None)
        elif op == "halt":
            g.mark_halt(target, stop_reason=name or None)
        else:
            g.increment_retries(target)
    return g


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(max_nodes=st.sampled_from([0, 3, 8]), steps=ops)
def test_round_trip_is_exact(max_nodes: int, steps: list[tuple[Any, ...]]) -> None:
    g = build(max_nodes, steps)
    raw = g.snapshot_json()
    for source in (raw, raw.decode(), g.snapshot()):
        loaded = ExecutionGraph.from_snapshot(source, max_nodes=max_nodes)
        assert without_snapshot_ts(loaded.snapshot_json()) == without_snapshot_ts(raw)
        assert loaded.aggregates() == g.aggregates()
        assert (loaded.chain_id, loaded.root_id, len(loaded)) == (g.chain_id, g.root_id, len(g))


def test_counter_continues_and_the_loaded_graph_keeps_working() -> None:
    g = ExecutionGraph(chain_id="c", max_nodes=3)
    root = g.create_root("run")
    for i in range(5):
        g.mark_success(g.begin_node(root, "llm", f"s{i}", running=True), 0.5, tokens_out=2)
    open_node = g.begin_node(root, "tool", "open", running=True)
    loaded = ExecutionGraph.from_snapshot(g.snapshot_json(), max_nodes=3)
    assert list(loaded.snapshot()["nodes"]) == list(g.snapshot()["nodes"])
    nxt = loaded.begin_node(root, "tool", "next")
    assert nxt == "n000008"
    loaded.mark_success(open_node, 1.0)
    agg = loaded.aggregates()
    assert (agg["total_llm_calls"], agg["total_tool_calls"], agg["total_cost_usd"]) == (5, 1, 3.5)
    assert loaded.max_nodes == 3 and loaded.pruned_count == 1


def test_empty_graph_round_trips() -> None:
    g = ExecutionGraph(chain_id="empty")
    loaded = ExecutionGraph.from_snapshot(g.snapshot())
    assert loaded.root_id is None and len(loaded) == 0
    assert loaded.create_root("run") == "n000001"


def good() -> dict[str, Any]:
    g = ExecutionGraph(chain_id="c")
    g.mark_success(g.begin_node(g.create_root("run"), "llm", "x", running=True), 0.1)
    snap: dict[str, Any] = json.loads(g.snapshot_json())
    return snap


def edit(path: list[Any], value: Any) -> dict[str, Any]:
    snap = good()
    target = snap
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return snap


@pytest.mark.parametrize(
    ("snapshot", "match"),
    [
        (b"{", "not strict JSON"),
        (b'{"chain_id": NaN}', "not strict JSON"),
        ("[1, 2]", "the snapshot must be an object"),
        (edit(["chain_id"], ""), r"snapshot\[\"chain_id\"\] must be a non-empty string"),
        (edit(["nodes", "n000002", "status"], "done"), r"nodes\[\"n000002\"\]\[\"status\"\]"),
        (edit(["nodes", "n000002", "cost_usd"], float("inf")), "not JSON-serialisable"),
        (edit(["nodes", "n000002", "tokens_out"], -1), r"\[\"tokens_out\"\] must be an integer"),
        (edit(["nodes", "n000002", "metadata"], KeyError), r"is missing \"metadata\""),
        (edit(["aggregates", "total_tokens_out"], 2**63), "integer out of the 64-bit range"),
        (edit(["aggregates", "total_llm_calls"], "1"), r"aggregates\[\"total_llm_calls\"\]"),
        (edit(["root_id"], "n000003"), r"snapshot\[\"root_id\"\]"),
        (edit(["nodes", "n000002", "parent_id"], None), "parent_id"),
        (edit(["surprise"], 1), 'unknown key "surprise"'),
    ],
)
def test_bad_snapshots_are_value_errors_naming_the_field(snapshot: Any, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        ExecutionGraph.from_snapshot(snapshot)


@pytest.mark.parametrize("bad", [5, None, ["x"], b"\xff\xfe"])
def test_wrong_input_types(bad: Any) -> None:
    with pytest.raises((TypeError, ValueError)):
        ExecutionGraph.from_snapshot(bad)


def test_root_id_and_reference_private_alias() -> None:
    g = ExecutionGraph()
    assert g.root_id is None and g._root_id is None
    root = g.create_root("run")
    assert g.root_id == g._root_id == root == "n000001"
    with pytest.raises(AttributeError):
        g._root_id = "n000002"  # type: ignore[misc]
