"""docs/dag-rules.md §8: compression into a summary node with boundary rewiring."""

from __future__ import annotations

import math

import pytest

from chainwarden.dag import DagEdgeError, DagInvalidArgumentError, DagPreconditionError, Graph


def conversation() -> Graph:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="q1", node_id="u1")
        m.create_node("agent_message", "finished", content="a1", node_id="a1")
        m.create_node("user_message", "finished", content="q2", node_id="u2")
        m.create_node("agent_message", "finished", content="a2", node_id="a2")
        m.create_node("agent_message", "finished", content="side", node_id="side")
        m.create_edge("u1", "a1", "sequence", edge_id="e1")
        m.create_edge("a1", "u2", "sequence", edge_id="e2")
        m.create_edge("u2", "a2", "dependency", edge_id="e3")
        m.create_edge("u1", "side", "branch", edge_id="e4")
    return g


def test_compression_rewires_and_archives() -> None:
    g = conversation()
    s = g.compress(["u1", "a1"], "they said hello", metadata={"by": "test"}, node_id="s")
    summary = g.node(s)
    assert (summary["node_type"], summary["state"]) == ("summary", "finished")
    assert summary["output"] == {"content": "they said hello"}
    assert summary["output_preview"] == {"content": "they said hello"}
    assert summary["metadata"] == {"by": "test"}
    for old in ("u1", "a1"):
        node = g.node(old)
        assert node["compressed_by_id"] == "s" and node["compressed_at"] is not None
    assert g.context_ids_for("a2") == ["s", "u2", "a2"]
    active = {(e["from_node_id"], e["to_node_id"], e["edge_type"]) for e in g.edges()}
    # The branch edge u1 -> side is archived, not rewired: the summary was never forked (§24).
    assert active == {("s", "u2", "sequence"), ("u2", "a2", "dependency")}
    (event,) = [e for e in g.events() if e["event_type"] == "subgraph_compressed"]
    assert event["subject_id"] == "s"
    assert event["particulars"] == {
        "summary_node_id": "s",
        "replaces_node_ids": ["a1", "u1"],
        "incoming_edge_ids": [],
        "outgoing_edge_ids": ["e2", "e4"],
        "internal_edge_ids": ["e1"],
    }
    # no node_created / edge_created for the summary (docs/design.md §15)
    assert all(e["subject_id"] != "s" for e in g.events() if e["event_type"] == "node_created")
    assert g.check_invariants() is None


def test_views_hide_and_show_archived() -> None:
    g = conversation()
    g.compress(["u1", "a1"], "sum", node_id="s")
    assert {n["node_id"] for n in g.nodes()} == {"s", "u2", "a2", "side"}
    assert {n["node_id"] for n in g.nodes(include_compressed=True)} == {"s", "u1", "a1", "u2", "a2", "side"}
    assert len(g.edges(include_compressed=True)) == len(g.edges()) + 3
    assert all(e["compressed_at"] is None for e in g.edges())


def test_incoming_boundary_is_rewired_too() -> None:
    g = conversation()
    g.compress(["a1", "u2"], "middle", node_id="s")
    assert g.context_ids_for("a2") == ["u1", "s", "a2"]
    types = {(e["from_node_id"], e["to_node_id"]): e["edge_type"] for e in g.edges()}
    assert types[("u1", "s")] == "sequence"
    assert types[("s", "a2")] == "dependency"


def test_preconditions_in_order() -> None:
    g = conversation()
    with g.mutate() as m:
        m.create_node("task", node_id="p")
        m.create_edge("a2", "p", "sequence")
    before = g.to_json()
    with pytest.raises(DagPreconditionError) as info:
        g.compress(["p", "u1"], "x")
    assert info.value.code == "dag.compress.not_finished"
    with pytest.raises(DagPreconditionError) as info:
        g.compress(["side"], "x")
    assert info.value.code == "dag.compress.summary_would_be_leaf"
    with pytest.raises(DagInvalidArgumentError) as bad:
        g.compress([], "x")
    assert bad.value.code == "dag.invalid_argument"
    with pytest.raises(DagInvalidArgumentError):
        g.compress("u1", "x")
    with pytest.raises(DagInvalidArgumentError):
        g.compress(["u1"], math.nan)  # type: ignore[arg-type]
    with pytest.raises(LookupError):
        g.compress(["ghost"], "x")
    assert g.to_json() == before
    g.compress(["u1"], "x", node_id="s1")
    with pytest.raises(DagPreconditionError) as info:
        g.compress(["u1", "p"], "x")
    assert info.value.code == "dag.compress.already_compressed"


def test_a_set_that_is_left_and_reentered_is_refused() -> None:
    g = conversation()
    before = g.to_json()
    with pytest.raises(DagEdgeError) as info:
        g.compress(["a1", "a2"], "not convex")
    assert info.value.code == "dag.edge.cycle"
    assert g.to_json() == before
