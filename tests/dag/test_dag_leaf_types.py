"""docs/dag-rules.md §5.2 for every node type in every state a leaf can be in (docs/testing.md "Boundary
tests"): only a terminal leaf that is not an `agent_message` is repaired, a finished `summary` included."""

from __future__ import annotations

import pytest
from dag_helpers import ALL_STATES

from chainwarden.dag import Graph

TYPES = ["user_message", "agent_message", "task", "summary"]
TERMINAL = {"finished", "errored", "rejected", "skipped", "cancelled"}


@pytest.mark.parametrize("state", ALL_STATES)
@pytest.mark.parametrize("node_type", TYPES)
def test_a_lone_leaf_is_repaired_exactly_when_the_rule_says(node_type: str, state: str) -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node(node_type, state, node_id="x", content="text")
    repaired = [e for e in g.events() if e["event_type"] == "leaf_invariant_repaired"]
    if state in TERMINAL and node_type != "agent_message":
        [reply] = g.leaves()
        assert reply != "x"
        node = g.node(reply)
        assert (node["node_type"], node["state"]) == ("agent_message", "pending")
        assert g.context_ids_for(reply) == ["x", reply]
        assert [(e["subject_id"], e["particulars"]) for e in repaired] == [(reply, {"leaf_node_id": "x"})]
    else:
        assert g.leaves() == ["x"]
        assert repaired == []
    assert g.repair_leaves() == []  # nothing left to repair
    assert g.check_invariants() is None


def test_ids_past_six_digits_are_plain_ids() -> None:
    """The DAG takes the caller's ids as they are (no padding): recorder-style ids on both sides of a
    million stay distinct through edges, leaves, context and a JSON round trip."""
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", node_id="n999999", content="q")
        m.create_node("agent_message", "finished", node_id="n1000000", content="a")
        m.create_node("agent_message", "finished", node_id="n0999999", content="b")
        m.create_edge("n999999", "n1000000", "sequence")
    assert sorted(g.leaves()) == ["n0999999", "n1000000"]
    assert g.context_ids_for("n1000000") == ["n999999", "n1000000"]
    again = Graph.from_json(g.to_json())
    assert again.to_json() == g.to_json()
    assert again.node("n1000000")["node_id"] == "n1000000"
    assert again.check_invariants() is None
