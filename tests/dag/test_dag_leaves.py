"""docs/dag-rules.md §5: causal leaves and their automatic repair."""

from __future__ import annotations

from dag_helpers import event_types, force_state

from chainwarden.dag import Graph


def test_mutate_repairs_a_finished_user_leaf() -> None:
    g = Graph()
    with g.mutate() as m:
        u = m.create_node("user_message", "finished", content="hi")
    leaves = g.leaves()
    assert len(leaves) == 1 and leaves[0] != u
    agent = g.node(leaves[0])
    assert (agent["node_type"], agent["state"]) == ("agent_message", "pending")
    assert g.context_ids_for(agent["node_id"]) == [u, agent["node_id"]]
    repaired = [e for e in g.events() if e["event_type"] == "leaf_invariant_repaired"]
    assert repaired == [
        {
            "event_type": "leaf_invariant_repaired",
            "subject_id": agent["node_id"],
            "particulars": {"leaf_node_id": u},
            "created_at": repaired[0]["created_at"],
        }
    ]
    # docs/design.md §15: repair creates no node_created / edge_created events
    assert event_types(g) == ["node_created", "leaf_invariant_repaired"]


def test_valid_leaves_are_left_alone() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="a", content="x")
        m.create_node("task", node_id="t")
        m.create_node("task", "running", node_id="r")
    assert g.leaves() == ["a", "r", "t"]
    assert g.repair_leaves() == []


def test_terminal_task_leaf_is_repaired_on_demand() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
        m.create_node("task", node_id="z")
    force_state(g, "t", "errored")
    added = g.repair_leaves()
    assert len(added) == 1
    assert g.context_ids_for(added[0]) == ["t", added[0]]
    assert sorted(g.leaves()) == sorted([added[0], "z"])


def test_branch_edges_do_not_make_a_non_leaf() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="a", content="x")
        m.create_node("agent_message", "finished", node_id="b", content="y")
        m.create_edge("a", "b", "branch")
    assert g.leaves() == ["a", "b"]


def test_audit_view_includes_archived_nodes() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="a", content="x")
    with g.mutate() as m:
        new = m.regenerate("a", new_node_id="a2")
    assert g.leaves() == [new]
    # the audit view ignores branch edges too, so the archived version is a leaf there
    assert g.leaves(include_compressed=True) == ["a", "a2"]
