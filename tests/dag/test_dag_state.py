"""Spec §2.3: the state machine as compare-and-set, with timestamps, metadata and events."""

from __future__ import annotations

import pytest
from dag_helpers import ALL_STATES, force_state

from chainwarden.dag import DagError, DagNotFoundError, Graph

ALLOWED = {
    ("pending", "running"),
    ("pending", "skipped"),
    ("running", "finished"),
    ("running", "errored"),
    ("running", "rejected"),
    ("running", "cancelled"),
}


def attempt(g: Graph, node_id: str, target: str) -> bool:
    if target == "running":
        return g.mark_running(node_id)
    if target == "finished":
        return g.mark_finished(node_id)
    return {
        "errored": g.mark_errored,
        "rejected": g.mark_rejected,
        "cancelled": g.mark_cancelled,
        "skipped": g.mark_skipped,
    }[target](node_id, "why")


@pytest.mark.parametrize("target", [s for s in ALL_STATES if s != "pending"])
@pytest.mark.parametrize("start", ALL_STATES)
def test_transition_table(start: str, target: str) -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="n")
    force_state(g, "n", start)
    events_before = len(g.events())
    allowed = (start, target) in ALLOWED
    assert attempt(g, "n", target) is allowed
    assert g.node("n")["state"] == (target if allowed else start)
    assert len(g.events()) == events_before + (1 if allowed else 0)


def test_timestamps_and_messages() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
        m.create_node("task", node_id="s")
    assert g.node("t")["started_at"] is None
    g.mark_running("t")
    started = g.node("t")["started_at"]
    assert started is not None and g.node("t")["finished_at"] is None
    g.mark_errored("t", ValueError("bad input"))
    t = g.node("t")
    assert t["metadata"] == {"error": "bad input"}
    assert t["finished_at"] >= started
    g.mark_skipped("s", "not needed")
    s = g.node("s")
    assert (s["metadata"], s["started_at"]) == ({"reason": "not needed"}, None)
    assert s["finished_at"] is not None


def test_mark_finished_deep_merges_output_then_writes_content() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", node_id="a", output={"usage": {"in": 1}}, metadata={"keep": 1})
    g.claim(1)
    assert g.mark_finished(
        "a",
        output={"usage": {"out": 2}, "content": "overwritten"},
        content="final",
        metadata={"model": "m"},
    )
    a = g.node("a")
    assert a["output"] == {"usage": {"in": 1, "out": 2}, "content": "final"}
    assert a["metadata"] == {"keep": 1, "model": "m"}
    assert a["output_preview"] == {"content": "final"}


def test_state_change_events() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    g.mark_running("t")
    g.mark_finished("t")
    changes = [
        (e["subject_id"], e["particulars"]) for e in g.events() if e["event_type"] == "node_state_changed"
    ]
    assert changes == [
        ("t", {"from": "pending", "to": "running"}),
        ("t", {"from": "running", "to": "finished"}),
    ]


@pytest.mark.parametrize("method", ["mark_running", "mark_finished", "node"])
def test_unknown_ids_raise_lookup_errors(method: str) -> None:
    g = Graph()
    with pytest.raises(DagNotFoundError) as info:
        getattr(g, method)("ghost")
    assert info.value.code == "dag.node_not_found"
    assert isinstance(info.value, LookupError)


@pytest.mark.parametrize("method", ["mark_errored", "mark_rejected", "mark_cancelled", "mark_skipped"])
def test_unknown_ids_with_reason(method: str) -> None:
    g = Graph()
    with pytest.raises(LookupError):
        getattr(g, method)("ghost", "r")


def test_unknown_edge() -> None:
    g = Graph()
    with pytest.raises(DagNotFoundError) as info:
        g.edge("ghost")
    assert info.value.code == "dag.edge_not_found"


def test_wrong_types_are_typed_errors() -> None:
    g = Graph()
    with pytest.raises(DagError) as info:
        g.mark_running(42)  # type: ignore[arg-type]
    assert info.value.code == "dag.invalid_argument"
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    g.mark_running("t")
    with pytest.raises(DagError):
        g.mark_finished("t", output="not a dict")  # type: ignore[arg-type]
    assert g.node("t")["state"] == "running"


def test_archived_nodes_do_not_transition() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="a", content="x")
    with g.mutate() as m:
        m.regenerate("a")
    assert g.mark_running("a") is False


def test_user_message_content_stays_in_input() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "running", content="draft", node_id="u")
    assert g.mark_finished("u", content="final")
    node = g.node("u")
    assert node["input"] == {"content": "final"}
    assert node["output"] == {}
