"""Hypothesis state machine: random operations, structural invariants checked after every step."""

from __future__ import annotations

import networkx as nx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from chainwarden.dag import DagError, Graph

NODE_TYPES = st.sampled_from(["user_message", "agent_message", "task", "summary"])
STATES = st.sampled_from(["pending", "running", "finished", "errored", "rejected", "skipped", "cancelled"])
EDGE_TYPES = st.sampled_from(["sequence", "dependency", "branch"])
PICK = st.integers(min_value=0, max_value=10_000)


class DagMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.g = Graph()
        self.leaves_must_be_valid = True

    def ids(self, *, active: bool = True) -> list[str]:
        return [n["node_id"] for n in self.g.nodes(include_compressed=not active)]

    def pick(self, i: int, *, active: bool = True) -> str | None:
        ids = self.ids(active=active)
        return ids[i % len(ids)] if ids else None

    def attempt_mutation(self, body: object) -> None:
        """Runs a mutate() block; a DagError must leave the graph byte-for-byte unchanged."""
        before = self.g.to_json()
        try:
            with self.g.mutate() as m:
                body(m)  # type: ignore[operator]
        except DagError:
            assert self.g.to_json() == before
        else:
            self.leaves_must_be_valid = True

    @rule(node_type=NODE_TYPES, state=STATES)
    def create_node(self, node_type: str, state: str) -> None:
        self.attempt_mutation(lambda m: m.create_node(node_type, state, content="c"))

    @rule(a=PICK, b=PICK, edge_type=EDGE_TYPES, active=st.booleans())
    def create_edge(self, a: int, b: int, edge_type: str, active: bool) -> None:
        x, y = self.pick(a, active=active), self.pick(b, active=active)
        if x is not None and y is not None:
            self.attempt_mutation(lambda m: m.create_edge(x, y, edge_type))

    @rule(i=PICK, node_type=NODE_TYPES)
    def fork(self, i: int, node_type: str) -> None:
        x = self.pick(i)
        if x is not None:
            self.attempt_mutation(lambda m: m.fork(x, node_type, content="f"))

    @rule(i=PICK, op=st.sampled_from(["retry", "regenerate", "edit"]), active=st.booleans())
    def replace(self, i: int, op: str, active: bool) -> None:
        x = self.pick(i, active=active)
        if x is None:
            return
        if op == "edit":
            self.attempt_mutation(lambda m: m.edit(x, {"content": "edited"}))
        else:
            self.attempt_mutation(lambda m: getattr(m, op)(x))

    @rule(i=PICK, j=PICK, op=st.sampled_from(["retry", "regenerate", "edit", "fork", "claim"]))
    def failing_block(self, i: int, j: int, op: str) -> None:
        """Whatever a block did (archives, takeovers, transitions), raising inside it undoes all of it."""
        before = self.g.to_json()
        events = len(self.g.events())
        x, y = self.pick(i), self.pick(j)
        try:
            with self.g.mutate() as m:
                n = m.create_node("task")
                if x is not None:
                    m.create_edge(x, n, "sequence")
                if y is not None:
                    if op == "edit":
                        m.edit(y, {"content": "e"})
                    elif op == "fork":
                        m.fork(y, "agent_message")
                    elif op == "claim":
                        self.g.claim(2)
                    else:
                        getattr(m, op)(y)
                raise RuntimeError("abort")
        except (RuntimeError, DagError):
            pass
        assert self.g.to_json() == before
        assert len(self.g.events()) == events

    @rule(k=st.integers(min_value=0, max_value=4))
    def claim(self, k: int) -> None:
        claimed = self.g.claim(k)
        assert claimed == sorted(claimed) and len(claimed) <= k
        assert all(self.g.node(c)["state"] == "running" for c in claimed)
        self.leaves_must_be_valid = False

    @rule(i=PICK, outcome=st.sampled_from(["finished", "errored", "rejected", "cancelled", "skipped"]))
    def finish(self, i: int, outcome: str) -> None:
        x = self.pick(i)
        if x is None:
            return
        if outcome == "finished":
            self.g.mark_finished(x, content="done")
        else:
            getattr(self.g, f"mark_{outcome}")(x, "why")
        self.leaves_must_be_valid = False

    @rule()
    def propagate(self) -> None:
        self.g.propagate_failures()
        assert self.g.propagate_failures() == []
        self.leaves_must_be_valid = False

    @rule(picks=st.lists(PICK, min_size=1, max_size=3))
    def compress(self, picks: list[int]) -> None:
        ids = [self.pick(i) for i in picks]
        before = self.g.to_json()
        try:
            self.g.compress([i for i in ids if i is not None], "summary")
        except DagError:
            assert self.g.to_json() == before
        self.leaves_must_be_valid = False

    @invariant()
    def engine_self_check(self) -> None:
        assert self.g.check_invariants() is None

    @invariant()
    def active_edges_touch_active_nodes_and_are_acyclic(self) -> None:
        active = set(self.ids())
        dg = nx.MultiDiGraph()
        dg.add_nodes_from(active)
        for e in self.g.edges(include_compressed=True):
            if e["compressed_at"] is None:
                assert e["from_node_id"] in active and e["to_node_id"] in active
                dg.add_edge(e["from_node_id"], e["to_node_id"])
        assert nx.is_directed_acyclic_graph(dg)

    @invariant()
    def leaves_valid_after_mutate(self) -> None:
        if not self.leaves_must_be_valid:
            return
        for leaf in self.g.leaves():
            node = self.g.node(leaf)
            assert node["node_type"] == "agent_message" or node["state"] in {"pending", "running"}

    @invariant()
    def context_is_a_topological_order(self) -> None:
        ids = self.ids()
        if not ids:
            return
        target = ids[-1]
        order = self.g.context_ids_for(target)
        assert order[-1] == target
        position = {n: i for i, n in enumerate(order)}
        for e in self.g.edges():
            if e["edge_type"] != "branch" and e["to_node_id"] in position:
                assert position[e["from_node_id"]] < position[e["to_node_id"]]

    @invariant()
    def json_round_trip_is_lossless(self) -> None:
        data = self.g.to_json()
        assert Graph.from_json(data).to_json() == data


DagMachine.TestCase.settings = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestDagMachine = DagMachine.TestCase


class WorkflowDagMachine(DagMachine):
    """The same operations on a task-workflow graph, `Graph(leaf_repair=False)`: no leaf is ever repaired."""

    def __init__(self) -> None:
        super().__init__()
        self.g = Graph(leaf_repair=False)

    @invariant()
    def leaves_valid_after_mutate(self) -> None:
        assert self.g.leaf_repair is False
        assert "leaf_invariant_repaired" not in {e["event_type"] for e in self.g.events()}
        for node in self.g.nodes(include_compressed=True):
            assert node["metadata"].get("generated_by") != "leaf_invariant"


WorkflowDagMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestWorkflowDag = WorkflowDagMachine.TestCase
