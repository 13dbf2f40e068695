"""Spec §4: causal closure, the stable smallest-id order, the entry schema and output_preview."""

from __future__ import annotations

import pytest

from chainwarden.dag import DagInvalidArgumentError, Graph


def diamond() -> Graph:
    g = Graph()
    with g.mutate() as m:
        for node_id in ["r", "c", "a", "b", "z", "t"]:
            m.create_node("agent_message", "finished", node_id=node_id, content=node_id)
        m.create_edge("r", "c", "sequence")
        m.create_edge("r", "a", "sequence")
        m.create_edge("a", "b", "dependency")
        m.create_edge("c", "t", "sequence")
        m.create_edge("b", "t", "dependency")
        m.create_edge("z", "t", "branch")
    return g


def test_ties_break_on_smallest_available_id() -> None:
    g = diamond()
    # after r, both a and c are available: a wins; b (unlocked by a) still beats c
    assert g.context_ids_for("t") == ["r", "a", "b", "c", "t"]
    assert [e["node_id"] for e in g.context_for("t")] == ["r", "a", "b", "c", "t"]


def test_branch_edges_are_not_followed() -> None:
    g = diamond()
    assert "z" not in g.context_ids_for("t")
    assert g.context_ids_for("z") == ["z"]


def test_order_is_topological_not_alphabetical() -> None:
    g = Graph()
    with g.mutate() as m:
        for node_id in ["a", "b", "c"]:
            m.create_node("agent_message", "finished", node_id=node_id, content="x")
        m.create_edge("c", "a", "sequence")
        m.create_edge("b", "a", "sequence")
    assert g.context_ids_for("a") == ["b", "c", "a"]


def test_unknown_and_inactive_targets_give_empty_context() -> None:
    g = diamond()
    assert g.context_for("missing") == []
    g.compress(["a", "b"], "summary of a and b", node_id="s")
    assert g.context_for("a") == []
    assert g.context_ids_for("t") == ["r", "c", "s", "t"]


def test_entry_schema_preview_and_full() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", "finished", node_id="t", input={"name": "search"}, output={"result": [1, 2]})
    preview = g.context_for("t")
    assert set(preview[0]) == {"node_id", "node_type", "state", "payload", "metadata"}
    assert preview[0]["payload"] == {"input": {"name": "search"}, "output_preview": {"result": "[1,2]"}}
    full = g.context_for("t", mode="full")
    assert full[0]["payload"]["output"] == {"result": [1, 2]}
    with pytest.raises(DagInvalidArgumentError):
        g.context_for("t", mode="everything")


def test_returned_dicts_are_copies() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", "finished", node_id="t", input={"name": "x"})
    g.context_for("t")[0]["payload"]["input"]["name"] = "changed"
    g.node("t")["input"]["name"] = "changed"
    assert g.node("t")["input"] == {"name": "x"}


def preview_of(output: dict[str, object]) -> object:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="n", output=output)
    return g.node("n")["output_preview"]


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ({"result": 1, "content": "c"}, {"content": "c"}),
        ({"other": 1, "result": None}, {"result": "null"}),
        ({"answer": {"k": "é", "n": [1.5, True]}}, {"answer": '{"k":"é","n":[1.5,true]}'}),
        ({"a": 1, "b": "two"}, {"json": '{"a":1,"b":"two"}'}),
        ({}, {}),
        ({"content": 3}, {"content": "3"}),
    ],
)
def test_preview_priority(output: dict[str, object], expected: object) -> None:
    assert preview_of(output) == expected


def test_preview_counts_code_points_not_bytes() -> None:
    exact = "é" * 200  # 400 bytes, 200 code points: kept whole
    assert preview_of({"content": exact}) == {"content": exact}
    long = "😀" * 201
    cut = preview_of({"content": long})
    assert cut == {"content": "😀" * 197 + "..."}


def test_preview_truncates_serialised_json() -> None:
    cut = preview_of({"result": list(range(100))})
    assert isinstance(cut, dict)
    text = cut["result"]
    assert len(text) == 200
    assert text.startswith("[0,1,2,") and text.endswith("...")


def test_preview_follows_mark_finished() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    g.claim(1)
    g.mark_finished("t", output={"result": {"rows": 2}, "extra": 1}, content="done")
    node = g.node("t")
    assert node["output"] == {"result": "done", "extra": 1}
    assert node["output_preview"] == {"result": "done"}
