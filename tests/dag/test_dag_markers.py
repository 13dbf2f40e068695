"""docs/design.md §24: what compression keeps on merged boundary edges, branch edges at the boundary, and the
marker leaf repair leaves on what it adds."""

from __future__ import annotations

import pytest
from dag_helpers import force_state

from chainwarden.dag import ExecutionResult, Graph, Runner

MARK = {"generated_by": "leaf_invariant"}
TERMINAL = ["finished", "errored", "rejected", "skipped", "cancelled"]


def edges_between(g: Graph, a: str, b: str, *, archived: bool = False) -> list[dict[str, object]]:
    return [
        e for e in g.edges(include_compressed=archived) if e["from_node_id"] == a and e["to_node_id"] == b
    ]


def two_finished_members() -> Graph:
    """u1 -> a1 inside; `ask` feeds both members, both feed `next`; metadata differs per edge."""
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="ask", node_id="ask")
        m.create_node("user_message", "finished", content="q1", node_id="u1")
        m.create_node("agent_message", "finished", content="a1", node_id="a1")
        m.create_node("task", node_id="next")
        m.create_edge("u1", "a1", "sequence", edge_id="inner")
        m.create_edge("ask", "u1", "dependency", edge_id="in1", metadata={"why": "ctx", "n": 1, "w": [1]})
        m.create_edge("ask", "a1", "dependency", edge_id="in2", metadata={"why": "ctx", "n": 2, "w": [1]})
        m.create_edge("u1", "next", "sequence", edge_id="out1", metadata={"a": 1, "b": {"x": 1}, "c": 3})
        m.create_edge("a1", "next", "sequence", edge_id="out2", metadata={"b": {"x": 1}, "a": 1, "c": 4})
        m.create_edge("a1", "next", "dependency", edge_id="out3", metadata={"only": "me"})
    return g


def test_merged_boundary_edges_keep_only_the_metadata_they_agree_on() -> None:
    g = two_finished_members()
    s = g.compress(["u1", "a1"], "summary", node_id="s")
    (incoming,) = edges_between(g, "ask", s)
    assert (incoming["edge_type"], incoming["metadata"]) == ("dependency", {"why": "ctx", "w": [1]})
    outgoing = {e["edge_type"]: e["metadata"] for e in edges_between(g, s, "next")}
    # Two sequence edges merge into one (keys in the first edge's order); a lone edge keeps everything.
    assert outgoing == {"sequence": {"a": 1, "b": {"x": 1}}, "dependency": {"only": "me"}}
    assert list(outgoing["sequence"]) == ["a", "b"]
    assert g.check_invariants() is None


def test_merged_edges_that_agree_on_nothing_get_empty_metadata() -> None:
    g = Graph()
    with g.mutate() as m:
        for n in ("x", "y"):
            m.create_node("agent_message", "finished", content=n, node_id=n)
        m.create_node("task", node_id="z")
        m.create_edge("x", "z", "sequence", metadata={"k": 1})
        m.create_edge("y", "z", "sequence", metadata={"k": 2})
    s = g.compress(["x", "y"], "both", node_id="s")
    assert [e["metadata"] for e in edges_between(g, s, "z")] == [{}]


def test_branch_edges_across_the_boundary_are_archived_not_rewired() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="root", node_id="root")
        m.create_node("user_message", "finished", content="q", node_id="q")
        m.create_node("agent_message", "finished", content="a", node_id="a")
        m.create_edge("root", "q", "sequence")
        m.create_edge("q", "a", "sequence")
        m.create_edge("root", "q", "branch", edge_id="in-branch", metadata={"branch_kinds": ["fork"]})
    with g.mutate() as m:
        forked = m.fork("a", "agent_message", state="finished", content="alt", node_id="alt")
    out_branch = [e["edge_id"] for e in edges_between(g, "a", forked) if e["edge_type"] == "branch"]
    s = g.compress(["q", "a"], "summary", node_id="s")
    # Blocking edges are rewired; no branch edge touches the summary, active or not.
    assert {(e["from_node_id"], e["to_node_id"], e["edge_type"]) for e in g.edges()} >= {
        ("root", s, "sequence"),
        (s, forked, "sequence"),
    }
    assert not [
        e
        for e in g.edges(include_compressed=True)
        if s in (e["from_node_id"], e["to_node_id"]) and e["edge_type"] == "branch"
    ]
    for edge_id in ["in-branch", *out_branch]:
        assert g.edge(edge_id)["compressed_at"] is not None
    (event,) = [e for e in g.events() if e["event_type"] == "subgraph_compressed"]
    assert "in-branch" in event["particulars"]["incoming_edge_ids"]
    assert out_branch[0] in event["particulars"]["outgoing_edge_ids"]
    assert g.check_invariants() is None


def test_a_path_out_through_a_branch_edge_and_back_is_not_a_cycle() -> None:
    """Branch edges are not rewired, so they cannot close a cycle through the summary."""
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="q", node_id="q")
        m.create_node("agent_message", "finished", content="a", node_id="a")
        m.create_node("agent_message", "finished", content="side", node_id="side")
        m.create_edge("q", "a", "sequence")
        m.create_edge("q", "side", "branch")
        m.create_edge("side", "a", "branch")
        m.create_node("task", node_id="t")
        m.create_edge("a", "t", "sequence")
    s = g.compress(["q", "a"], "summary", node_id="s")
    assert g.node(s)["state"] == "finished" and g.check_invariants() is None


def repaired_child(g: Graph, leaf: str) -> dict[str, object]:
    (edge,) = [e for e in edges_between(g, leaf, g.leaves()[0]) if e["edge_type"] == "sequence"]
    assert edge["metadata"] == MARK
    child = g.node(edge["to_node_id"])
    assert (child["node_type"], child["state"], child["metadata"]) == ("agent_message", "pending", MARK)
    return child


@pytest.mark.parametrize("state", TERMINAL)
def test_leaf_repair_marks_what_it_adds_after_a_task(state: str) -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    force_state(g, "t", state)
    assert g.repair_leaves() == g.leaves()
    repaired_child(g, "t")


@pytest.mark.parametrize("state", TERMINAL)
def test_leaf_repair_marks_what_it_adds_after_a_user_message(state: str) -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", state, content="hi", node_id="u")
    repaired_child(g, "u")


def test_a_finished_summary_leaf_is_repaired_and_marked() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("summary", "finished", content="earlier talk", node_id="s")
    child = repaired_child(g, "s")
    assert g.context_ids_for(str(child["node_id"])) == ["s", child["node_id"]]


def test_a_rewrite_after_the_summary_never_leaves_it_a_leaf() -> None:
    """The new version of the summary's successor takes over its edges, so no repair is needed."""
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="q1", node_id="u1")
        m.create_node("agent_message", "finished", content="a1", node_id="a1")
        m.create_node("agent_message", "finished", content="a2", node_id="a2")
        m.create_edge("u1", "a1", "sequence")
        m.create_edge("a1", "a2", "sequence")
    s = g.compress(["u1", "a1"], "hello", node_id="s")
    with g.mutate() as m:
        m.create_edge(s, "a2", "dependency")
    with g.mutate() as m:
        m.regenerate("a2", new_node_id="a3")
    assert edges_between(g, s, "a3")  # the new version takes the summary's edges: not a leaf
    g.claim(1)
    assert g.mark_finished("a3", content="again")
    assert g.repair_leaves() == []  # a finished agent leaf is valid


def test_agent_messages_and_in_flight_nodes_are_never_repaired() -> None:
    g = Graph()
    with g.mutate() as m:
        for state in TERMINAL:
            m.create_node("agent_message", state, content="x", node_id=f"agent-{state}")
        m.create_node("task", "pending", node_id="pending-task")
        m.create_node("task", "running", node_id="running-task")
    assert g.repair_leaves() == []
    assert all(n["metadata"] == {} for n in g.nodes())


def test_markers_survive_the_json_round_trip_and_the_runner() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")

    def tool(node: dict[str, object], context: list[dict[str, object]]) -> ExecutionResult:
        return ExecutionResult.finished(output={"result": 1})

    Runner(g, {"task": tool}).tick()
    child = repaired_child(g, "t")
    back = Graph.from_json(g.to_json())
    assert back.node(str(child["node_id"]))["metadata"] == MARK
