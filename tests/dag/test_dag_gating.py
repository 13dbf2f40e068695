"""Spec §3: the scheduler's gating truth table, claim order and limits."""

from __future__ import annotations

import math

import pytest
from dag_helpers import ALL_STATES, force_state, tasks

from chainwarden.dag import DagError, DagInvalidArgumentError, Graph

UNBLOCKS = {
    # parent state: (sequence unblocks, dependency unblocks)
    "pending": (False, False),
    "running": (False, False),
    "finished": (True, True),
    "errored": (True, False),
    "rejected": (True, False),
    "skipped": (True, False),
    "cancelled": (True, False),
}


@pytest.mark.parametrize("edge_type", ["sequence", "dependency"])
@pytest.mark.parametrize("parent_state", ALL_STATES)
def test_gating_truth_table(parent_state: str, edge_type: str) -> None:
    g = Graph()
    tasks(g, "p", "c")
    with g.mutate() as m:
        m.create_edge("p", "c", edge_type)
    force_state(g, "p", parent_state)
    expected = UNBLOCKS[parent_state][0 if edge_type == "sequence" else 1]
    assert ("c" in g.claim(10)) is expected
    assert g.node("c")["state"] == ("running" if expected else "pending")


def test_every_blocking_parent_must_unblock() -> None:
    g = Graph()
    tasks(g, "a", "b", "c")
    with g.mutate() as m:
        m.create_edge("a", "c", "sequence")
        m.create_edge("b", "c", "dependency")
    assert g.claim(10) == ["a", "b"]
    g.mark_errored("a", "x")
    assert g.claim(10) == []
    g.mark_finished("b")
    assert g.claim(10) == ["c"]


def test_branch_edges_never_gate() -> None:
    g = Graph()
    tasks(g, "a", "b")
    with g.mutate() as m:
        m.create_edge("a", "b", "branch")
    assert g.claim(10) == ["a", "b"]


def test_claim_is_ascending_by_id_and_respects_limit() -> None:
    g = Graph()
    tasks(g, "n3", "n1", "n2", "n0")
    assert g.claim(2) == ["n0", "n1"]
    assert g.claim(0) == []
    assert g.claim() == ["n2", "n3"]
    assert [e["particulars"] for e in g.events() if e["event_type"] == "node_state_changed"][:1] == [
        {"from": "pending", "to": "running"}
    ]
    assert g.node("n0")["started_at"] is not None


def test_only_executable_pending_nodes_are_claimed() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "pending", content="hi", node_id="u")
        m.create_node("summary", "pending", content="s", node_id="s")
        m.create_node("agent_message", node_id="a")
        m.create_node("task", "finished", node_id="t")
    claimed = g.claim(10)
    assert "a" in claimed
    assert not {"u", "s", "t"} & set(claimed)
    assert all(g.node(n)["node_type"] in {"task", "agent_message"} for n in claimed)


@pytest.mark.parametrize("limit", [-1, 1.5, math.nan, math.inf, "3", True, None])
def test_claim_rejects_bad_limits_without_side_effects(limit: object) -> None:
    g = Graph()
    tasks(g, "a")
    before = g.to_json()
    with pytest.raises(DagInvalidArgumentError) as info:
        g.claim(limit)  # type: ignore[arg-type]
    assert info.value.code == "dag.invalid_argument"
    assert isinstance(info.value, DagError)
    assert g.to_json() == before


def test_archived_parents_do_not_gate() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="a", content="x")
        m.create_node("task", node_id="t")
        m.create_edge("a", "t", "dependency")
    # regenerate needs a leaf; t makes 'a' non-leaf, so compress a into a summary instead
    g.compress(["a"], "sum", node_id="s")
    assert g.node("a")["compressed_at"] is not None
    assert g.claim(10) == ["t"]
