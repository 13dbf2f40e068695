"""Mermaid export, the event log, and the lossless JSON round trip."""

from __future__ import annotations

import json

import pytest
from dag_helpers import event_types

from chainwarden.dag import DagInvalidArgumentError, Graph


def small() -> Graph:
    g = Graph(graph_id="g-1")
    with g.mutate() as m:
        m.create_node("user_message", "finished", content='say  "hi"\n\tplease', node_id="u-1")
        m.create_node("task", node_id="t-1", input={"name": "web.search", "arguments": {"q": "x"}})
        m.create_node("agent_message", "finished", content="y" * 100, node_id="a-1")
        m.create_edge("u-1", "t-1", "sequence", edge_id="e-1")
        m.create_edge("t-1", "a-1", "dependency", edge_id="e-2")
        m.create_edge("u-1", "a-1", "branch", edge_id="e-3", metadata={"branch_kinds": ["fork", "edit"]})
    return g


def test_mermaid_layout() -> None:
    lines = small().to_mermaid().splitlines()
    # Node ids are creation indexes (docs/design.md §25); lines stay sorted by the caller's ids.
    assert lines == [
        "flowchart TD",
        'N2["agent_message:finished ' + "y" * 54 + '..."]',
        'N1["task:pending web.search"]',
        'N0["user_message:finished say #quot;hi#quot; please"]',
        "N0 -->|sequence| N1",
        "N1 -->|dependency| N2",
        "N0 -->|branch:fork,edit| N2",
    ]


def test_mermaid_label_limit_and_archived_view() -> None:
    g = small()
    short = g.to_mermaid(max_label_chars=10).splitlines()
    assert short[1] == 'N2["agent_m..."]'
    g.compress(["u-1"], "sum", node_id="s-1")
    active = g.to_mermaid()
    assert "N0[" not in active and 'N3["summary:finished sum"]' in active
    assert "N0[" in g.to_mermaid(include_compressed=True)
    with pytest.raises(DagInvalidArgumentError):
        g.to_mermaid(max_label_chars=0)


def test_plain_branch_label_without_kinds() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", content="a", node_id="a")
        m.create_node("agent_message", "finished", content="b", node_id="b")
        m.create_edge("a", "b", "branch")
    assert g.to_mermaid().splitlines()[-1] == "N0 -->|branch| N1"


def test_event_shapes() -> None:
    g = small()
    assert event_types(g)[:4] == ["node_created", "node_created", "node_created", "edge_created"]
    created = g.events()[3]
    assert created["subject_id"] == "e-1"
    assert created["particulars"] == {"edge_type": "sequence", "from_node_id": "u-1", "to_node_id": "t-1"}
    assert g.events()[0]["particulars"] == {"node_type": "user_message", "state": "finished"}
    assert isinstance(created["created_at"], float)


def test_json_round_trip_is_lossless() -> None:
    g = small()
    with g.mutate() as m:
        m.regenerate("a-1", new_node_id="a-2")
    g.claim(5)
    g.mark_errored("t-1", "failed")
    assert g.propagate_failures() == ["a-2"]
    g.compress(["u-1"], "summary", node_id="s")
    data = g.to_json()
    back = Graph.from_json(data)
    assert back.to_json() == data
    assert back.graph_id == "g-1"
    assert back.events() == g.events()
    assert back.nodes(include_compressed=True) == g.nodes(include_compressed=True)
    assert back.edges(include_compressed=True) == g.edges(include_compressed=True)
    assert back.claim(10) == g.claim(10)
    assert back.check_invariants() is None
    doc = json.loads(data)
    assert doc["format"] == "chainwarden.dag"


@pytest.mark.parametrize(
    "data",
    [b"", b"not json", b"{}", b'{"format":"chainwarden.dag","version":99}', 12, "\udcff"],
)
def test_from_json_rejects_garbage(data: object) -> None:
    with pytest.raises(DagInvalidArgumentError):
        Graph.from_json(data)  # type: ignore[arg-type]


def test_from_json_rejects_a_cycle() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="a")
        m.create_node("task", node_id="b")
        m.create_edge("a", "b", "sequence")
    doc = json.loads(g.to_json())
    reverse = dict(doc["edges"][0], edge_id="back", from_node_id="b", to_node_id="a")
    doc["edges"].append(reverse)
    with pytest.raises(DagInvalidArgumentError, match="cycle"):
        Graph.from_json(json.dumps(doc))


@pytest.mark.parametrize("bad", [0, 2, -5, 1.5, float("nan"), float("inf"), True, "80", None])
def test_mermaid_rejects_bad_label_limits(bad: object) -> None:
    with pytest.raises(DagInvalidArgumentError) as info:
        small().to_mermaid(max_label_chars=bad)  # type: ignore[arg-type]
    assert info.value.code == "dag.invalid_argument"
