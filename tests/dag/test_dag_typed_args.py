"""Every DagEngine argument is typed: a wrong type raises DagInvalidArgumentError whose message starts with
the argument's name, before the engine is touched (the graph's JSON is byte-for-byte unchanged)."""

from __future__ import annotations

from typing import Any

import pytest

from chainwarden._core import DAG_ERROR_CODES, DagEngine
from chainwarden.dag import DagError, DagInvalidArgumentError, Graph


def engine() -> DagEngine:
    """u (finished user_message) -> a (finished agent_message); t1 finished task, t2 pending task."""
    e = DagEngine(graph_id="g")
    e.begin()
    e.create_node("user_message", "finished", content="hi", node_id="u")
    e.create_node("agent_message", "finished", content="hello", node_id="a")
    e.create_edge("u", "a", "sequence", edge_id="e1")
    e.create_node("task", "finished", node_id="t1")
    e.create_node("task", node_id="t2")
    e.commit()
    return e


BAD = object()
SURROGATE = "x\ud800"

# (method, positional args, keyword args, the argument that is wrong)
CASES: list[tuple[str, tuple[Any, ...], dict[str, Any], str]] = [
    ("create_node", (1,), {}, "node_type"),
    ("create_node", ("task", 1), {}, "state"),
    ("create_node", ("task",), {"content": BAD}, "content"),
    ("create_node", ("task",), {"input": 1}, "input"),
    ("create_node", ("task",), {"input": [1]}, "input"),
    ("create_node", ("task",), {"output": "x"}, "output"),
    ("create_node", ("task",), {"metadata": 1}, "metadata"),
    ("create_node", ("task",), {"node_id": 1}, "node_id"),
    ("create_node", ("task",), {"node_id": SURROGATE}, "node_id"),
    ("create_edge", (1, "t2", "dependency"), {}, "from_id"),
    ("create_edge", ("t1", b"t2", "dependency"), {}, "to_id"),
    ("create_edge", ("t1", "t2", None), {}, "edge_type"),
    ("create_edge", ("t1", "t2", "dependency"), {"metadata": []}, "metadata"),
    ("create_edge", ("t1", "t2", "dependency"), {"edge_id": 7}, "edge_id"),
    ("fork", (1, "task"), {}, "from_id"),
    ("fork", ("t1", 1), {}, "node_type"),
    ("fork", ("t1", "task"), {"state": 1}, "state"),
    ("fork", ("t1", "task"), {"content": {1: 2}}, "content"),
    ("fork", ("t1", "task"), {"input": ()}, "input"),
    ("fork", ("t1", "task"), {"metadata": "m"}, "metadata"),
    ("fork", ("t1", "task"), {"node_id": 1.5}, "node_id"),
    ("retry", (1,), {}, "node_id"),
    ("retry", ("t1",), {"new_node_id": 1}, "new_node_id"),
    ("regenerate", (None,), {}, "node_id"),
    ("regenerate", ("a",), {"new_node_id": 1}, "new_node_id"),
    ("edit", (1, {}), {}, "node_id"),
    ("edit", ("u", BAD), {}, "new_input"),
    ("edit", ("u", {"content": "x"}), {"new_node_id": 1}, "new_node_id"),
    ("compress", ("t1", "s"), {}, "node_ids"),
    ("compress", (1, "s"), {}, "node_ids"),
    ("compress", ([1], "s"), {}, "node_ids"),
    ("compress", (["t1"], 1), {}, "summary_content"),
    ("compress", (["t1"], "s"), {"metadata": 1}, "metadata"),
    ("compress", (["t1"], "s"), {"node_id": 1}, "node_id"),
    ("mark_running", (1,), {}, "node_id"),
    ("mark_finished", (1,), {}, "node_id"),
    ("mark_finished", ("t2",), {"content": float("nan")}, "content"),
    ("mark_finished", ("t2",), {"output": 1}, "output"),
    ("mark_finished", ("t2",), {"metadata": {"k": BAD}}, "metadata"),
    ("mark_errored", (1, "why"), {}, "node_id"),
    ("mark_rejected", (1, "why"), {}, "node_id"),
    ("mark_cancelled", (1, "why"), {}, "node_id"),
    ("mark_skipped", (1, "why"), {}, "node_id"),
    ("apply_result", (1, "finished"), {}, "node_id"),
    ("apply_result", ("t2", 1), {}, "outcome"),
    ("apply_result", ("t2", "finished"), {"content": BAD}, "content"),
    ("apply_result", ("t2", "finished"), {"output": 1}, "output"),
    ("apply_result", ("t2", "finished"), {"metadata": 1}, "metadata"),
    ("claim", ("1",), {}, "limit"),
    ("claim", (True,), {}, "limit"),
    ("claim", (-1,), {}, "limit"),
    ("claim", (2**70,), {}, "limit"),
    ("leaves", (), {"include_compressed": 1}, "include_compressed"),
    ("nodes", (), {"include_compressed": "yes"}, "include_compressed"),
    ("edges", (), {"include_compressed": 0}, "include_compressed"),
    ("node", (1,), {}, "node_id"),
    ("edge", (1,), {}, "edge_id"),
    ("context_for", (1,), {}, "node_id"),
    ("context_for", ("a",), {"mode": 1}, "mode"),
    ("context_ids_for", (1,), {}, "node_id"),
    ("to_mermaid", (), {"include_compressed": 1, "max_label_chars": 80}, "include_compressed"),
    ("to_mermaid", (), {"include_compressed": False, "max_label_chars": 2}, "max_label_chars"),
    ("to_mermaid", (), {"include_compressed": False, "max_label_chars": "80"}, "max_label_chars"),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "arg"), CASES)
def test_bad_argument_names_itself_and_changes_nothing(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any], arg: str
) -> None:
    e = engine()
    before = e.to_json()
    with pytest.raises(DagInvalidArgumentError) as info:
        getattr(e, method)(*args, **kwargs)
    assert str(info.value).startswith(arg), str(info.value)
    assert info.value.code == "dag.invalid_argument"
    assert e.to_json() == before
    assert e.check_invariants() is None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (1, "data must be bytes or str"),
        (b"\xff", "data is not UTF-8"),
        (SURROGATE, "data is not valid Unicode"),
    ],
)
def test_from_json_bad_data(data: object, message: str) -> None:
    with pytest.raises(DagInvalidArgumentError, match=f"^{message}"):
        DagEngine.from_json(data)  # type: ignore[arg-type]


def test_bad_graph_id() -> None:
    with pytest.raises(DagInvalidArgumentError, match=r"^graph_id must be a string"):
        DagEngine(graph_id=1)  # type: ignore[arg-type]


def test_reason_is_any_object_stored_as_its_str() -> None:
    e = engine()
    e.mark_running("t2")
    assert e.mark_errored("t2", ValueError("boom"))
    assert e.node("t2")["metadata"]["error"] == "boom"


def test_public_graph_raises_the_same() -> None:
    g = Graph()
    with pytest.raises(DagInvalidArgumentError, match=r"^limit must be an int >= 0"):
        g.claim("3")  # type: ignore[arg-type]
    with pytest.raises(DagInvalidArgumentError, match=r"^node_id must be a string"):
        g.node(3)  # type: ignore[arg-type]


def test_registry_maps_every_code_to_its_class() -> None:
    assert DAG_ERROR_CODES["dag.invalid_argument"] is DagInvalidArgumentError
    assert DAG_ERROR_CODES["dag.node_not_found"].__bases__ == (DagError, LookupError)
    assert all(issubclass(cls, DagError) for cls in DAG_ERROR_CODES.values())
    with pytest.raises(TypeError):
        DAG_ERROR_CODES["dag.new"] = DagError  # type: ignore[index]
    # The Python layer's own checks carry the class's only code without writing it.
    assert DagInvalidArgumentError("x").code == "dag.invalid_argument"
    assert DagError("x").code == "dag.error"
