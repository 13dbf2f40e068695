"""docs/design.md §23 in the DAG: NaN and infinities never enter, and what comes out is strict JSON."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest

from chainwarden.dag import DagInvalidArgumentError, Graph, Mutation


def refuse_constant(name: str) -> object:
    raise AssertionError(f"non-strict JSON constant {name}")


def strict(data: bytes) -> Any:
    return json.loads(data, parse_constant=refuse_constant)


def base() -> Graph:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="q", node_id="u")
        m.create_node("agent_message", "finished", content="a", node_id="a")
        m.create_node("task", node_id="t")
        m.create_edge("u", "a", "sequence")
        m.create_edge("a", "t", "sequence")
    assert g.claim(1) == ["t"]
    return g


BAD_NUMBERS = [math.nan, math.inf, -math.inf]


def nested(value: float) -> dict[str, Any]:
    return {"ok": 1, "deep": [{"x": [1, {"y": value}]}]}


def in_block(op: Callable[[Mutation], object]) -> Callable[[Graph], object]:
    def run(g: Graph) -> object:
        with g.mutate() as m:
            return op(m)

    return run


def cases(bad: float) -> list[tuple[str, Callable[[Graph], object]]]:
    return [
        ("metadata", in_block(lambda m: m.create_node("task", metadata=nested(bad)))),
        ("input", in_block(lambda m: m.create_node("task", input=nested(bad)))),
        ("output", in_block(lambda m: m.create_node("agent_message", output=nested(bad)))),
        ("content", in_block(lambda m: m.create_node("agent_message", content=bad))),
        ("content", in_block(lambda m: m.create_node("agent_message", content=[bad]))),
        ("metadata", in_block(lambda m: m.create_edge("u", "t", "dependency", metadata=nested(bad)))),
        ("metadata", in_block(lambda m: m.fork("a", "task", metadata=nested(bad)))),
        ("input", in_block(lambda m: m.fork("a", "task", input=nested(bad)))),
        ("new_input", in_block(lambda m: m.edit("u", {"content": "q2", "extra": bad}))),
        ("metadata", lambda g: g.mark_finished("t", metadata=nested(bad))),
        ("output", lambda g: g.mark_finished("t", output=nested(bad))),
        ("content", lambda g: g.mark_finished("t", content={"v": bad})),
        ("metadata", lambda g: g.compress(["u"], "s", metadata=nested(bad))),
        ("metadata", lambda g: g.apply_result("t", "finished", metadata=nested(bad))),
    ]


@pytest.mark.parametrize("bad", BAD_NUMBERS, ids=["nan", "inf", "-inf"])
def test_non_finite_numbers_are_refused_everywhere_and_change_nothing(bad: float) -> None:
    for argument, call in cases(bad):
        g = base()
        before = g.to_json()
        with pytest.raises(DagInvalidArgumentError) as info:
            call(g)
        assert isinstance(info.value, ValueError)
        assert str(info.value).startswith(argument), (argument, str(info.value))
        assert "NaN and infinities are not JSON" in str(info.value)
        assert g.to_json() == before
        assert g.node("t")["state"] == "running"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e999", "-1e400"])
def test_from_json_refuses_non_finite_numbers(literal: str) -> None:
    doc = base().to_json().decode().replace('"metadata":{}', '"metadata":{"x":' + literal + "}", 1)
    assert literal in doc
    with pytest.raises(DagInvalidArgumentError, match="invalid graph JSON"):
        Graph.from_json(doc)


def test_to_json_is_always_strict_json() -> None:
    g = base()
    extremes = {
        "big": 1.7976931348623157e308,
        "tiny": 5e-324,
        "neg": -0.0,
        "i64": [2**63 - 1, -(2**63)],
        "text": 'quote " backslash \\ nul \x00 line\u2028 é 😀',
    }
    assert g.mark_finished("t", output={"result": extremes}, metadata=extremes)
    data = g.to_json()
    doc = strict(data)
    (node,) = [n for n in doc["nodes"] if n["node_id"] == "t"]
    assert node["metadata"] == extremes and node["output"]["result"] == extremes
    assert Graph.from_json(data).to_json() == data


def test_integers_beyond_64_bits_are_refused_with_the_argument_named() -> None:
    g = base()
    before = g.to_json()
    for value in (2**63, -(2**63) - 1, 10**40):
        with pytest.raises(DagInvalidArgumentError, match=r"^metadata: integer out of the 64-bit range"):
            g.mark_finished("t", metadata={"n": value})
    assert g.to_json() == before


def test_a_file_rewritten_by_a_json_tool_loads_the_same() -> None:
    """from_json pulls records straight from the text (docs/dag.md "Reading a file"): sorted keys, a `str`
    and indented output all load to the same graph; two node lists are refused, named."""
    g = base()
    data = g.to_json()
    doc = json.loads(data)
    for text in (json.dumps(doc, sort_keys=True), json.dumps(doc, indent=2), data.decode()):
        assert Graph.from_json(text).to_json() == data
    twice = '{"nodes": [], ' + json.dumps(doc)[1:]
    with pytest.raises(DagInvalidArgumentError, match='"nodes" appears twice'):
        Graph.from_json(twice)
