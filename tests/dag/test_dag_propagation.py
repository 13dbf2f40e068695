"""docs/dag-rules.md §6 / docs/design.md §10: failure propagation in rounds, to a fixpoint."""

from __future__ import annotations

import pytest
from dag_helpers import force_state, tasks

from chainwarden.dag import Graph


def chain() -> Graph:
    g = Graph()
    tasks(g, "a", "b", "c", "d", "e")
    with g.mutate() as m:
        m.create_edge("a", "b", "dependency", edge_id="ab")
        m.create_edge("b", "c", "dependency", edge_id="bc")
        m.create_edge("a", "d", "dependency", edge_id="ad")
        m.create_edge("a", "e", "sequence", edge_id="ae")
    return g


@pytest.mark.parametrize("failure", ["errored", "rejected", "cancelled", "skipped"])
def test_chain_is_skipped_round_by_round(failure: str) -> None:
    g = chain()
    force_state(g, "a", failure)
    # round 1: b and d (ascending), round 2: c; e hangs on a sequence edge and is never skipped
    assert g.propagate_failures() == ["b", "d", "c"]
    assert g.node("e")["state"] == "pending"
    c = g.node("c")
    assert c["state"] == "skipped"
    assert c["finished_at"] is not None
    assert c["metadata"] == {
        "reason": "blocked_by_failed_dependencies",
        "blocked_by": [{"node_id": "b", "state": "skipped", "edge_id": "bc"}],
    }
    assert g.propagate_failures() == []


def test_finished_parent_propagates_nothing() -> None:
    g = chain()
    force_state(g, "a", "finished")
    assert g.propagate_failures() == []


def test_blocked_by_lists_every_failed_parent_sorted() -> None:
    g = Graph()
    tasks(g, "p2", "p1", "ok", "child")
    with g.mutate() as m:
        m.create_edge("p2", "child", "dependency", edge_id="e2")
        m.create_edge("p1", "child", "dependency", edge_id="e1")
        m.create_edge("ok", "child", "dependency", edge_id="e3")
    force_state(g, "p2", "rejected")
    force_state(g, "p1", "errored")
    force_state(g, "ok", "finished")
    assert g.propagate_failures() == ["child"]
    assert g.node("child")["metadata"]["blocked_by"] == [
        {"node_id": "p1", "state": "errored", "edge_id": "e1"},
        {"node_id": "p2", "state": "rejected", "edge_id": "e2"},
    ]


def test_non_executable_and_terminal_children_are_untouched() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="p")
        m.create_node("summary", "pending", content="s", node_id="s")
        m.create_node("task", "finished", node_id="done")
        m.create_edge("p", "s", "dependency")
        m.create_edge("p", "done", "dependency")
    force_state(g, "p", "errored")
    assert g.propagate_failures() == []
    assert g.node("s")["state"] == "pending"
    assert g.node("done")["state"] == "finished"


def test_skips_record_state_change_events() -> None:
    g = chain()
    force_state(g, "a", "errored")
    g.propagate_failures()
    skips = [e for e in g.events() if e["particulars"] == {"from": "pending", "to": "skipped"}]
    assert [e["subject_id"] for e in skips] == ["b", "d", "c"]


def test_wide_fan_out_in_one_round() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="root")
        for i in range(500):
            m.create_node("task", node_id=f"c{i:04d}")
            m.create_edge("root", f"c{i:04d}", "dependency")
    force_state(g, "root", "errored")
    skipped = g.propagate_failures()
    assert skipped == [f"c{i:04d}" for i in range(500)]
    assert g.check_invariants() is None
