"""Hostile arguments to every public `Graph` entry point: a clear Python exception or success, never a panic,
and a failed call leaves `to_json()` byte-for-byte unchanged."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from chainwarden.dag import DagError, DagInvalidArgumentError, Graph, Mutation, Runner

ODD_TEXT = st.sampled_from(["", "\x00", "a\x00b", "\ud800", "x\udcff", "é", "😀", "\u202e", "-", " ", "\n"])
TEXT = st.one_of(ODD_TEXT, st.text(max_size=6))
INTS = st.one_of(st.integers(-3, 12), st.sampled_from([2**63 - 1, 2**63, -(2**63) - 1, 2**200, -1]))
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
SCALARS = st.one_of(st.none(), st.booleans(), INTS, FLOATS, TEXT, st.binary(max_size=3))
JSONISH = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(st.one_of(TEXT, st.integers(0, 3), st.none()), inner, max_size=3)
    ),
    max_leaves=8,
)


def nest(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"d": [value]}
    return value


HOSTILE = st.one_of(JSONISH, st.integers(250, 700).map(nest), st.just(object()), st.just({1, 2}))
NODE_TYPES = st.one_of(st.sampled_from(["user_message", "agent_message", "task", "summary"]), HOSTILE)
STATES = st.one_of(st.sampled_from(["pending", "running", "finished", "errored", "cancelled"]), HOSTILE)
EDGE_TYPES = st.one_of(st.sampled_from(["sequence", "dependency", "branch"]), HOSTILE)
MAYBE = st.one_of(st.none(), HOSTILE)

EXPECTED = (DagError, TypeError, ValueError, LookupError)


def strict_json(data: bytes) -> None:
    def refuse(name: str) -> object:
        raise AssertionError(name)

    json.loads(data, parse_constant=refuse)


class FuzzedGraph(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.g = Graph()
        with self.g.mutate() as m:
            m.create_node("user_message", "finished", content="hello", node_id="u")
            m.create_node("task", node_id="t")
            m.create_edge("u", "t", "sequence")

    def ids(self) -> list[str]:
        return [n["node_id"] for n in self.g.nodes(include_compressed=True)]

    def an_id(self, data: st.DataObject) -> Any:
        known = self.ids()
        return data.draw(st.one_of(st.sampled_from(known), HOSTILE) if known else HOSTILE)

    def attempt(self, call: Callable[[], object]) -> None:
        before = self.g.to_json()
        try:
            call()
        except EXPECTED:
            assert self.g.to_json() == before
        # Anything else (PanicException is a BaseException) fails the test with its traceback.

    def in_block(self, op: Callable[[Mutation], object]) -> Callable[[], object]:
        def run() -> object:
            with self.g.mutate() as m:
                return op(m)

        return run

    @rule(data=st.data(), node_type=NODE_TYPES, state=STATES)
    def create_node(self, data: st.DataObject, node_type: Any, state: Any) -> None:
        kw = {k: data.draw(MAYBE) for k in ("content", "input", "output", "metadata", "node_id")}
        self.attempt(self.in_block(lambda m: m.create_node(node_type, state, **kw)))

    @rule(data=st.data(), edge_type=EDGE_TYPES, metadata=MAYBE, edge_id=MAYBE)
    def create_edge(self, data: st.DataObject, edge_type: Any, metadata: Any, edge_id: Any) -> None:
        a, b = self.an_id(data), self.an_id(data)
        self.attempt(
            self.in_block(lambda m: m.create_edge(a, b, edge_type, metadata=metadata, edge_id=edge_id))
        )

    @rule(data=st.data(), node_type=NODE_TYPES, state=STATES, content=MAYBE, metadata=MAYBE)
    def fork(self, data: st.DataObject, node_type: Any, state: Any, content: Any, metadata: Any) -> None:
        src = self.an_id(data)
        self.attempt(
            self.in_block(lambda m: m.fork(src, node_type, state=state, content=content, metadata=metadata))
        )

    @rule(
        data=st.data(), op=st.sampled_from(["retry", "regenerate", "edit"]), new_id=MAYBE, new_input=HOSTILE
    )
    def replace(self, data: st.DataObject, op: str, new_id: Any, new_input: Any) -> None:
        target = self.an_id(data)
        if op == "edit":
            self.attempt(self.in_block(lambda m: m.edit(target, new_input, new_node_id=new_id)))
        else:
            self.attempt(self.in_block(lambda m: getattr(m, op)(target, new_node_id=new_id)))

    @rule(data=st.data(), summary=HOSTILE, metadata=MAYBE, node_id=MAYBE, as_list=st.booleans())
    def compress(self, data: st.DataObject, summary: Any, metadata: Any, node_id: Any, as_list: bool) -> None:
        ids = (
            [self.an_id(data) for _ in range(data.draw(st.integers(0, 3)))] if as_list else data.draw(HOSTILE)
        )
        self.attempt(lambda: self.g.compress(ids, summary, metadata=metadata, node_id=node_id))

    @rule(
        data=st.data(),
        mark=st.sampled_from(["running", "finished", "errored", "rejected", "cancelled", "skipped"]),
        arg=HOSTILE,
        output=MAYBE,
    )
    def mark_state(self, data: st.DataObject, mark: str, arg: Any, output: Any) -> None:
        target = self.an_id(data)
        if mark == "running":
            self.attempt(lambda: self.g.mark_running(target))
        elif mark == "finished":
            self.attempt(lambda: self.g.mark_finished(target, content=arg, output=output, metadata=output))
        else:
            self.attempt(lambda: getattr(self.g, f"mark_{mark}")(target, arg))

    @rule(limit=st.one_of(st.integers(-2, 5), HOSTILE))
    def claim(self, limit: Any) -> None:
        self.attempt(lambda: self.g.claim(limit))

    @rule(data=st.data(), mode=st.one_of(st.sampled_from(["preview", "full"]), HOSTILE), flag=HOSTILE)
    def reads(self, data: st.DataObject, mode: Any, flag: Any) -> None:
        target = self.an_id(data)
        self.attempt(lambda: self.g.context_for(target, mode=mode))
        self.attempt(lambda: self.g.context_ids_for(target))
        self.attempt(lambda: self.g.node(target))
        self.attempt(lambda: self.g.edge(target))
        self.attempt(lambda: self.g.leaves(include_compressed=flag))
        self.attempt(lambda: self.g.nodes(include_compressed=flag))
        self.attempt(lambda: self.g.to_mermaid(include_compressed=flag, max_label_chars=data.draw(HOSTILE)))

    @rule(data=st.data())
    def from_json(self, data: st.DataObject) -> None:
        doc = self.g.to_json()
        cut = int(len(doc) * data.draw(st.floats(0, 1)))  # timestamps vary the length from run to run
        hostile = data.draw(st.one_of(HOSTILE, st.just(doc[:cut]), st.just(doc.decode()[:cut] + "\udcff")))
        try:
            back = Graph.from_json(hostile)
        except EXPECTED:
            return
        assert back.check_invariants() is None

    @rule(outcome=st.one_of(st.sampled_from(["finished", "errored", "skipped"]), HOSTILE), data=st.data())
    def apply_result(self, outcome: Any, data: st.DataObject) -> None:
        target = self.an_id(data)
        self.attempt(
            lambda: self.g.apply_result(target, outcome, message=data.draw(MAYBE), output=data.draw(MAYBE))
        )

    @rule()
    def housekeeping(self) -> None:
        self.g.propagate_failures()
        self.g.repair_leaves()

    @invariant()
    def stays_consistent_and_strict(self) -> None:
        assert self.g.check_invariants() is None
        data = self.g.to_json()
        strict_json(data)
        assert Graph.from_json(data).to_json() == data


FuzzedGraph.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)
test_fuzzed_graph = pytest.mark.slow(FuzzedGraph.TestCase)


def _executor(node: dict[str, Any], context: list[dict[str, Any]]) -> Any:
    return None


@settings(max_examples=80, deadline=None)
@given(
    executors=st.one_of(
        st.dictionaries(
            st.one_of(st.sampled_from(["task", "agent_message", "tool", "summary"]), TEXT, INTS, st.none()),
            st.one_of(st.just(_executor), HOSTILE),
            max_size=3,
        ),
        HOSTILE,
    ),
    graph=st.one_of(st.just("graph"), HOSTILE),
)
def test_runner_construction_refuses_or_accepts_cleanly(executors: Any, graph: Any) -> None:
    g = Graph() if graph == "graph" else graph
    try:
        runner = Runner(g, executors)
    except (DagInvalidArgumentError, TypeError) as err:
        assert str(err)
        return
    # Accepted: a real graph and a non-empty map of executable node types to callables.
    assert isinstance(g, Graph)
    assert executors and set(executors) <= {"task", "agent_message"}
    assert all(callable(f) for f in executors.values())
    assert runner.tick() == []
