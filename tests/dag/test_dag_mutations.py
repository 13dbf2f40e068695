"""Spec §7: create / fork / retry / regenerate / edit, and the all-or-nothing mutate() block."""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any

import pytest
from dag_helpers import force_state

from chainwarden._core import DagEngine
from chainwarden.dag import (
    DagEdgeError,
    DagError,
    DagInvalidArgumentError,
    DagNotFoundError,
    DagPreconditionError,
    Graph,
    Mutation,
)


def code_of(exc: pytest.ExceptionInfo[DagError]) -> str:
    return exc.value.code


def test_content_goes_where_the_node_type_keeps_it() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="u", node_id="u")
        m.create_node("task", "finished", content={"rows": 1}, node_id="t")
        m.create_node("agent_message", "finished", content="a", node_id="a")
        m.create_node("summary", "finished", content="s", node_id="s")
    assert g.node("u")["input"] == {"content": "u"}
    assert g.node("t")["output"] == {"result": {"rows": 1}}
    assert g.node("a")["output"] == {"content": "a"}
    assert g.node("s")["output"] == {"content": "s"}


BAD_NODE_ARGS: list[tuple[dict[str, Any], str]] = [
    ({"node_type": "robot"}, "dag.invalid_argument"),
    ({"node_type": "task", "state": "done"}, "dag.invalid_argument"),
    ({"node_type": "task", "input": [1]}, "dag.invalid_argument"),
    ({"node_type": "task", "metadata": "x"}, "dag.invalid_argument"),
    ({"node_type": "task", "output": {"x": math.nan}}, "dag.invalid_argument"),
    ({"node_type": "task", "output": {"x": math.inf}}, "dag.invalid_argument"),
    ({"node_type": "task", "input": {1: "int key"}}, "dag.invalid_argument"),
    ({"node_type": "task", "input": {"x": object()}}, "dag.invalid_argument"),
    ({"node_type": "task", "node_id": ""}, "dag.invalid_argument"),
    ({"node_type": "task", "node_id": "taken"}, "dag.invalid_argument"),
    ({"node_type": "user_message", "state": "finished"}, "dag.invalid_argument"),
    ({"node_type": 7}, "dag.invalid_argument"),
]


@pytest.mark.parametrize(("kwargs", "code"), BAD_NODE_ARGS)
def test_bad_node_arguments_leave_the_graph_unchanged(kwargs: dict[str, Any], code: str) -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="taken")
    before = g.to_json()
    with pytest.raises(DagInvalidArgumentError) as info, g.mutate() as m:
        m.create_node(**kwargs)
    assert info.value.code == code
    assert isinstance(info.value, ValueError)
    assert g.to_json() == before


def test_edge_errors() -> None:
    g = Graph()
    with g.mutate() as m:
        for node_id in "abc":
            m.create_node("task", node_id=node_id)
        m.create_edge("a", "b", "sequence", edge_id="ab")
        m.create_edge("b", "c", "dependency")
    cases: list[tuple[tuple[str, str, str], type[DagError], str]] = [
        (("a", "a", "sequence"), DagEdgeError, "dag.edge.self_loop"),
        (("c", "a", "sequence"), DagEdgeError, "dag.edge.cycle"),
        (("c", "a", "branch"), DagEdgeError, "dag.edge.cycle"),
        (("a", "nope", "sequence"), DagNotFoundError, "dag.node_not_found"),
        (("a", "c", "causes"), DagInvalidArgumentError, "dag.invalid_argument"),
    ]
    before = g.to_json()
    for args, cls, code in cases:
        with pytest.raises(cls) as info, g.mutate() as m:
            m.create_edge(*args)
        assert info.value.code == code
    with pytest.raises(DagInvalidArgumentError), g.mutate() as m:
        m.create_edge("a", "c", "sequence", edge_id="ab")
    assert g.to_json() == before
    assert isinstance(DagNotFoundError("x"), LookupError)


def test_duplicate_active_edge_returns_the_existing_id() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="a")
        m.create_node("task", node_id="b")
        first = m.create_edge("a", "b", "sequence")
        assert m.create_edge("a", "b", "sequence") == first
        other = m.create_edge("a", "b", "dependency")
    assert other != first
    assert len(g.edges()) == 2


def test_inactive_endpoint_is_rejected() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", node_id="a", content="x")
        m.create_node("task", node_id="t")
    with g.mutate() as m:
        m.regenerate("a", new_node_id="a2")
    with pytest.raises(DagEdgeError) as info, g.mutate() as m:
        m.create_edge("a", "t", "sequence")
    assert info.value.code == "dag.edge.inactive_endpoint"


def test_fork_creates_sequence_and_branch() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="q", node_id="u")
        m.create_node("agent_message", "finished", content="a", node_id="a")
        m.create_edge("u", "a", "sequence")
    with g.mutate() as m:
        f = m.fork("u", "agent_message", node_id="f", metadata={"why": "alt"})
    edges = {(e["from_node_id"], e["to_node_id"], e["edge_type"]): e for e in g.edges()}
    assert ("u", "f", "sequence") in edges
    assert edges[("u", "f", "branch")]["metadata"] == {"branch_kinds": ["fork"]}
    assert g.node(f)["metadata"] == {"why": "alt"}
    assert g.node("a")["compressed_at"] is None


def test_fork_preconditions_in_order() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="p")
        m.create_node("agent_message", "finished", content="x", node_id="old")
    with g.mutate() as m:
        m.regenerate("old")
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.fork("old", "task")
    assert info.value.code == "dag.fork.source_inactive"
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.fork("p", "task")
    assert info.value.code == "dag.fork.source_not_terminal"
    with pytest.raises(DagNotFoundError), g.mutate() as m:
        m.fork("ghost", "task")


def failed_task_with_downstream() -> Graph:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="go", node_id="u")
        m.create_node("task", node_id="t", input={"name": "fetch", "arguments": {"q": 1}}, metadata={"k": 1})
        m.create_node("agent_message", node_id="next")
        m.create_edge("u", "t", "sequence", edge_id="e_ut")
        m.create_edge("t", "next", "dependency", edge_id="e_tn")
    assert g.claim(1) == ["t"]
    g.mark_errored("t", "timeout")
    return g


def test_retry_replaces_and_takes_over_pending_downstream() -> None:
    g = failed_task_with_downstream()
    with g.mutate() as m:
        new = m.retry("t", new_node_id="t2")
    node = g.node(new)
    assert (node["state"], node["retry_of_id"]) == ("pending", "t")
    assert node["input"] == {"name": "fetch", "arguments": {"q": 1}}
    assert node["metadata"] == {"k": 1, "attempt": 2}
    old = g.node("t")
    assert old["compressed_at"] is not None and old["compressed_by_id"] == "t2"
    assert g.context_ids_for("next") == ["u", "t2", "next"]
    replaced = next(e for e in g.events() if e["event_type"] == "node_replaced")
    p = replaced["particulars"]
    assert (p["kind"], p["old_id"], p["new_id"], p["archived_node_ids"]) == ("retry", "t", "t2", ["t"])
    branch = next(e for e in g.edges(include_compressed=True) if e["edge_type"] == "branch")
    assert branch["metadata"] == {"branch_kinds": ["retry"]}
    assert sorted(p["archived_edge_ids"]) == p["archived_edge_ids"]
    assert set(p["archived_edge_ids"]) == {"e_ut", "e_tn", branch["edge_id"]}
    # a second failure counts the attempt up again
    assert g.claim(5) == ["t2"]
    g.mark_errored("t2", "again")
    with g.mutate() as m:
        third = m.retry("t2")
    assert g.node(third)["metadata"]["attempt"] == 3
    assert g.check_invariants() is None


def test_retry_preconditions_in_order() -> None:
    g = failed_task_with_downstream()
    for target, code in [("u", "dag.retry.not_retriable")]:
        with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
            m.retry(target)
        assert info.value.code == code
    g2 = Graph()
    with g2.mutate() as m:
        m.create_node("task", "finished", node_id="done")
    with pytest.raises(DagPreconditionError) as info, g2.mutate() as m:
        m.retry("done")
    assert info.value.code == "dag.retry.bad_state"
    g.claim(5)  # nothing ready (next depends on a failed task) ...
    force_state(g, "next", "skipped")  # ... so make the downstream terminal by hand
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.retry("t")
    assert info.value.code == "dag.retry.downstream_not_pending"
    fresh = failed_task_with_downstream()
    with fresh.mutate() as m:
        m.retry("t", new_node_id="t2")
    with pytest.raises(DagNotFoundError) as nf, fresh.mutate() as m:
        m.retry("t")
    assert nf.value.code == "dag.node_not_found"


def test_regenerate_swaps_a_finished_leaf_agent() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="q", node_id="u")
        m.create_node("agent_message", node_id="a", input={"prompt": "p"}, metadata={"m": 1})
        m.create_edge("u", "a", "sequence")
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.regenerate("a")
    assert info.value.code == "dag.regenerate.bad_state"
    g.claim(1)
    g.mark_finished("a", content="first")
    with g.mutate() as m:
        a2 = m.regenerate("a")
    node = g.node(a2)
    assert (node["state"], node["input"], node["metadata"], node["output"]) == (
        "pending",
        {"prompt": "p"},
        {"m": 1},
        {},
    )
    assert g.context_ids_for(a2) == ["u", a2]
    assert g.leaves() == [a2]


def test_regenerate_refuses_a_non_leaf() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", content="x", node_id="a")
        m.create_node("task", node_id="t")
        m.create_edge("a", "t", "sequence")
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.regenerate("a")
    assert info.value.code == "dag.regenerate.not_leaf"


def test_edit_archives_downstream_and_regrows() -> None:
    g = Graph()
    with g.mutate() as m:
        u = m.create_node("user_message", "finished", content="old", input={"lang": "en"})
    (agent,) = g.leaves()
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.edit(u, {"content": "new"})
    assert info.value.code == "dag.edit.downstream_active"
    g.claim(1)
    g.mark_finished(agent, content="reply")
    with g.mutate() as m:
        u2 = m.edit(u, {"content": "new"})
    assert g.node(u2)["input"] == {"content": "new", "lang": "en"}
    assert g.node(u2)["state"] == "finished"
    assert g.node(u2)["finished_at"] is not None
    assert g.node(agent)["compressed_at"] is not None
    (fresh,) = g.leaves()
    assert fresh not in {agent, u2}
    assert g.context_ids_for(fresh) == [u2, fresh]
    replaced = next(e for e in g.events() if e["event_type"] == "node_replaced")
    assert replaced["particulars"]["archived_node_ids"] == sorted([u, agent])


def test_edit_preconditions() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("agent_message", "finished", content="x", node_id="a")
        m.create_node("user_message", "finished", content="x", node_id="u")
    with pytest.raises(DagPreconditionError) as info, g.mutate() as m:
        m.edit("a", {"content": "y"})
    assert info.value.code == "dag.edit.bad_state"
    with pytest.raises(DagInvalidArgumentError), g.mutate() as m:
        m.edit("u", ["not", "a", "dict"])  # type: ignore[arg-type]


def test_failed_block_undoes_everything_and_records_nothing() -> None:
    g = failed_task_with_downstream()
    before = g.to_json()
    events_before = len(g.events())
    with pytest.raises(RuntimeError, match="changed my mind"), g.mutate() as m:
        m.create_node("task", node_id="extra")
        m.create_edge("u", "extra", "sequence")
        m.retry("t")
        raise RuntimeError("changed my mind")
    assert g.to_json() == before
    assert len(g.events()) == events_before
    assert g.check_invariants() is None


def test_handle_is_dead_after_the_block() -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task")
    with pytest.raises(DagInvalidArgumentError):
        m.create_node("task")


def test_nested_blocks_roll_back_independently() -> None:
    g = Graph()
    with g.mutate() as outer:
        outer.create_node("task", node_id="kept")
        with pytest.raises(KeyError), g.mutate() as inner:
            inner.create_node("task", node_id="dropped")
            raise KeyError("inner")
    assert [n["node_id"] for n in g.nodes()] == ["kept"]


def test_the_handle_works_only_inside_its_block() -> None:
    """`Mutation` is native (rust/py/src/dag/mutation.rs): the block ends it, also when the block raises,
    and every call after that raises DagInvalidArgumentError with the graph unchanged."""
    g = Graph()
    with g.mutate() as m:
        assert isinstance(m, Mutation)
        assert m.create_node("task", node_id="a") == "a"
        assert g.node("a")["state"] == "pending"  # the default state of the contract
    with pytest.raises(DagInvalidArgumentError, match="this mutation block has ended"):
        m.create_node("task")
    with pytest.raises(ValueError), g.mutate() as failed:
        failed.create_node("task", node_id="b")
        raise ValueError("boom")
    for call in (
        lambda: failed.create_edge("a", "b", "dependency"),
        lambda: failed.fork("a", "task"),
        lambda: failed.retry("a"),
        lambda: failed.regenerate("a"),
        lambda: failed.edit("a", {"x": 1}),
    ):
        with pytest.raises(DagInvalidArgumentError, match="this mutation block has ended"):
            call()
    assert [n["node_id"] for n in g.nodes()] == ["a"]


class Name(str):
    """A `str` subclass: a mutation's fast entry hands it to the general one."""


SHAPES_OF_CREATE_NODE: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("task",), {}),
    (("task", None), {}),
    (("task", "finished"), {}),
    (("agent_message", "finished"), {"content": "answer"}),
    (("agent_message", "finished"), {"content": None}),
    (("agent_message",), {"content": {"k": [1, 2]}}),
    ((Name("task"), Name("finished")), {}),
    (("agent_message",), {"state": "finished", "content": Name("x")}),
    (("task",), {"content": "c", "metadata": {"m": 1}}),
]


@pytest.mark.parametrize(("args", "kwargs"), SHAPES_OF_CREATE_NODE)
def test_a_mutations_create_node_makes_the_engines_node_whatever_the_calls_shape(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """`Mutation.create_node` reads a plain call itself and hands others to PyO3's entry: both make the node
    `DagEngine.create_node` makes (docs/dag.md "Mutations are atomic")."""
    g = Graph()
    with g.mutate() as m:
        made = m.create_node(*args, **kwargs)
    assert type(made) is str
    e = DagEngine()
    expected = e.node(e.create_node(*args, **kwargs))
    got = g.node(made)
    for key in ("node_id", "created_at", "finished_at"):
        got.pop(key), expected.pop(key)
    assert got == expected


def test_a_mutations_create_edge_makes_the_engines_edge_whatever_the_calls_shape() -> None:
    g = Graph()
    with g.mutate() as m:
        a, b, c = (m.create_node("task") for _ in range(3))
        first = m.create_edge(a, b, "dependency")
        assert m.create_edge(a, b, "dependency") == first  # the existing edge's id (docs/design.md §9)
        assert m.create_edge(Name(b), c, "dependency", metadata={"w": 1}, edge_id="e") == "e"
        assert m.create_edge(from_id=a, to_id=c, edge_type="branch") != first
    assert sorted((x["edge_type"], str(x["metadata"])) for x in g.edges()) == [
        ("branch", "{}"),
        ("dependency", "{'w': 1}"),
        ("dependency", "{}"),
    ]


# Ids of 36 bytes that are not UUIDs (one not ASCII at all), shorter and longer ones, and a canonical UUID.
ODD_IDS = ["é" * 18, "x" * 36, "😀" * 9, "ü-ä", "a" * 37, "0190a2b3-c4d5-7e6f-8a9b-0c1d2e3f4a5b"]


def test_ids_of_any_text_come_back_exactly_as_given() -> None:
    """The fast entries read a compact ASCII `str` in place and copy 36 ASCII bytes into a new `str` as one
    block (docs/dag.md "Ids and indexes"); any other text goes the long way. Either way an id reads back as
    the very text it was given."""
    g = Graph()
    with g.mutate() as m:
        made = [m.create_node("task", node_id=i) for i in ODD_IDS]
        edges = [m.create_edge(a, b, "dependency") for a, b in pairwise(made)]
    assert made == ODD_IDS
    assert [g.node(i)["node_id"] for i in ODD_IDS] == ODD_IDS
    ends = {(e["from_node_id"], e["to_node_id"]) for e in g.edges()}
    assert ends == set(pairwise(ODD_IDS))
    assert all(type(e) is str and len(e) == 36 and e.isascii() for e in edges)


CALLS_THAT_FAIL: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [
    ("create_node", ("nope",), {}),
    ("create_node", ("task", "nope"), {}),
    ("create_node", ("user_message", "finished"), {}),
    ("create_node", ("task", 1), {}),
    ("create_node", (1,), {}),
    ("create_node", ("task",), {"content": object()}),
    ("create_node", ("task", "x\ud800"), {}),
    ("create_node", (), {}),
    ("create_node", ("task", "pending", "extra"), {}),
    ("create_node", ("task",), {"colour": "red"}),
    ("create_edge", ("t", "missing", "dependency"), {}),
    ("create_edge", ("t", "t", "dependency"), {}),
    ("create_edge", ("t", "u", "nope"), {}),
    ("create_edge", ("u", "t", "dependency"), {}),
    ("create_edge", ("t", "u"), {}),
    ("create_edge", ("t", "u", "dependency", "extra"), {}),
    ("create_edge", ("t", 1, "dependency"), {}),
]


@pytest.mark.parametrize(("method", "args", "kwargs"), CALLS_THAT_FAIL)
def test_a_mutations_build_calls_fail_as_the_engines_do(
    method: str, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    """Whichever entry reads the call, a bad one raises the engine's error and changes nothing."""

    engine = DagEngine(graph_id="g")
    g = Graph(graph_id="g")  # in memory here, in a store under tests/dag/store/test_store_suite.py
    with g.mutate() as m:
        for build in (engine, m):
            build.create_node("task", node_id="t")
            build.create_node("task", node_id="u")
            build.create_edge("t", "u", "dependency", edge_id="tu")

    with pytest.raises(Exception) as by_engine:
        getattr(engine, method)(*args, **kwargs)
    before = g.to_json()
    with g.mutate() as m, pytest.raises(Exception) as by_mutation:
        getattr(m, method)(*args, **kwargs)
    said = str(by_mutation.value).replace("Mutation.", "DagEngine.")
    assert (type(by_mutation.value), said) == (type(by_engine.value), str(by_engine.value))
    assert g.to_json() == before
