"""DAG engine benchmarks (pytest-benchmark). Run with the release build (`make build`), see benches/README.md:

    .venv/bin/pytest benches/bench_dag_test.py --benchmark-only -q -p no:randomly

The ordering benchmarks compare chainwarden's `context_ids_for` with networkx and rustworkx computing the same
thing (ancestor closure over blocking edges + lexicographic topological order) on the same graph; each
fixture asserts once, outside the timing, that all three agree.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import networkx as nx
import pytest
import rustworkx as rx

from chainwarden.dag import DagEdgeError, Graph

CHAT_TURNS = 20_000
RANDOM_NODES = 200_000
FAN_OUT = 10_000

Edges = list[tuple[str, str]]


class Built:
    def __init__(self, graph: Graph, ids: list[str], edges: Edges) -> None:
        self.graph = graph
        self.ids = ids
        self.edges = edges
        self.rx_graph = rx.PyDiGraph()
        index = {node_id: i for node_id, i in zip(ids, self.rx_graph.add_nodes_from(ids), strict=True)}
        self.rx_graph.add_edges_from_no_data([(index[a], index[b]) for a, b in edges])
        self.rx_index = index
        self.nx_graph = nx.DiGraph()
        self.nx_graph.add_nodes_from(ids)
        self.nx_graph.add_edges_from(edges)


def build_chat() -> Built:
    g = Graph()
    ids: list[str] = []
    edges: Edges = []
    with g.mutate() as m:
        previous: str | None = None
        for turn in range(CHAT_TURNS):
            for node_type, text in (("user_message", "question"), ("agent_message", "answer")):
                n = m.create_node(node_type, "finished", content=f"{text} {turn}")
                if previous is not None:
                    m.create_edge(previous, n, "sequence")
                    edges.append((previous, n))
                ids.append(n)
                previous = n
    return Built(g, ids, edges)


def build_random_dag(seed: int, window: int | None = None) -> Built:
    """Each node gets up to two random earlier parents: from anywhere (a shallow closure for the last node,
    ~1.3k nodes) or from the previous `window` nodes (a deep one: the last node reaches ~80% of the graph)."""
    rng = random.Random(seed)
    g = Graph()
    ids: list[str] = []
    edges: Edges = []
    with g.mutate() as m:
        for i in range(RANDOM_NODES):
            n = m.create_node("agent_message", "finished", content="x")
            if i:
                low = 0 if window is None else max(0, i - window)
                for parent in {ids[rng.randrange(low, i)] for _ in range(2)}:
                    edge_type = "dependency" if rng.random() < 0.5 else "sequence"
                    m.create_edge(parent, n, edge_type)
                    edges.append((parent, n))
            ids.append(n)
    return Built(g, ids, edges)


@pytest.fixture(scope="module")
def chat() -> Built:
    return build_chat()


@pytest.fixture(scope="module")
def random_dag() -> Built:
    return build_random_dag(seed=7)


@pytest.fixture(scope="module")
def deep_dag() -> Built:
    return build_random_dag(seed=13, window=64)


def rx_context(built: Built, target: str) -> list[str]:
    closure = rx.ancestors(built.rx_graph, built.rx_index[target])
    closure.add(built.rx_index[target])
    sub = built.rx_graph.subgraph(sorted(closure))
    order: list[str] = rx.lexicographical_topological_sort(sub, key=lambda node_id: node_id)
    return order


def nx_context(built: Built, target: str) -> list[str]:
    closure = nx.ancestors(built.nx_graph, target) | {target}
    return list(nx.lexicographical_topological_sort(built.nx_graph.subgraph(closure)))


def cw_context(built: Built, target: str) -> list[str]:
    return built.graph.context_ids_for(target)


IMPLEMENTATIONS: dict[str, Callable[[Built, str], list[str]]] = {
    "chainwarden": cw_context,
    "rustworkx": rx_context,
    "networkx": nx_context,
}


def check_agreement(built: Built) -> list[str]:
    target = built.ids[-1]
    expected = cw_context(built, target)
    assert rx_context(built, target) == expected
    assert nx_context(built, target) == expected
    return expected


@pytest.mark.benchmark(group="context-order-chat-40k")
@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_context_order_chat(benchmark: Any, chat: Built, impl: str) -> None:
    expected = check_agreement(chat)
    assert len(expected) == 2 * CHAT_TURNS
    fn = IMPLEMENTATIONS[impl]
    rounds = 3 if impl == "networkx" else 20
    result = benchmark.pedantic(fn, args=(chat, chat.ids[-1]), rounds=rounds, iterations=1, warmup_rounds=1)
    assert result == expected


@pytest.mark.benchmark(group="context-order-random-200k")
@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_context_order_random_dag(benchmark: Any, random_dag: Built, impl: str) -> None:
    expected = check_agreement(random_dag)
    fn = IMPLEMENTATIONS[impl]
    rounds = 2 if impl == "networkx" else 10
    result = benchmark.pedantic(fn, args=(random_dag, random_dag.ids[-1]), rounds=rounds, iterations=1)
    assert result == expected


@pytest.mark.benchmark(group="context-order-deep-random-200k")
@pytest.mark.parametrize("impl", list(IMPLEMENTATIONS))
def test_context_order_deep_random_dag(benchmark: Any, deep_dag: Built, impl: str) -> None:
    expected = check_agreement(deep_dag)
    assert len(expected) > RANDOM_NODES * 0.75
    fn = IMPLEMENTATIONS[impl]
    rounds = 2 if impl == "networkx" else 10
    result = benchmark.pedantic(fn, args=(deep_dag, deep_dag.ids[-1]), rounds=rounds, iterations=1)
    assert result == expected


@pytest.mark.benchmark(group="context-for-chat-40k")
@pytest.mark.parametrize("mode", ["preview", "full"])
def test_context_for_dicts_chat(benchmark: Any, chat: Built, mode: str) -> None:
    result = benchmark.pedantic(
        chat.graph.context_for, args=(chat.ids[-1],), kwargs={"mode": mode}, rounds=10, iterations=1
    )
    assert len(result) == 2 * CHAT_TURNS


@pytest.mark.benchmark(group="claim-100")
def test_claim_100(benchmark: Any) -> None:
    rng = random.Random(3)
    g = Graph()
    with g.mutate() as m:
        done = [m.create_node("agent_message", "finished", content="x") for _ in range(RANDOM_NODES // 2)]
        for _ in range(RANDOM_NODES // 2):
            t = m.create_node("task")
            for parent in {rng.choice(done) for _ in range(2)}:
                m.create_edge(parent, t, "dependency")
    result = benchmark.pedantic(g.claim, args=(100,), rounds=200, iterations=1)
    assert len(result) == 100


@pytest.mark.benchmark(group="edge-insert-cycle-check-200k")
def test_edge_insert_with_cycle_check(benchmark: Any) -> None:
    built = build_random_dag(seed=11)
    rng = random.Random(5)
    n = len(built.ids)
    half = n // 2
    pairs = iter([(built.ids[rng.randrange(half)], built.ids[rng.randrange(half, n)]) for _ in range(400)])

    def insert() -> str:
        a, b = next(pairs)
        with built.graph.mutate() as m:
            return m.create_edge(a, b, "sequence")

    benchmark.pedantic(insert, rounds=200, iterations=1)
    assert built.graph.check_invariants() is None


@pytest.mark.benchmark(group="edge-insert-refused-cycle-200k")
def test_edge_insert_refused_cycle(benchmark: Any, random_dag: Built) -> None:
    """The worst case: the search walks everything reachable before it finds the closing path."""
    first, last = random_dag.ids[0], random_dag.ids[-1]
    ancestors = set(random_dag.graph.context_ids_for(last))
    assert first in ancestors

    def refuse() -> None:
        try:
            with random_dag.graph.mutate() as m:
                m.create_edge(last, first, "sequence")
        except DagEdgeError:
            return
        raise AssertionError("the cycle was accepted")

    benchmark.pedantic(refuse, rounds=10, iterations=1)


@pytest.mark.benchmark(group="propagate-fan-out-10k")
def test_propagate_failures_fan_out(benchmark: Any) -> None:
    def setup() -> tuple[tuple[Graph], dict[str, Any]]:
        g = Graph()
        with g.mutate() as m:
            root = m.create_node("task", node_id="root")
            for i in range(FAN_OUT):
                m.create_edge(root, m.create_node("task", node_id=f"c{i:05d}"), "dependency")
        g.claim(1)
        g.mark_errored(root, "boom")
        return (g,), {}

    def run(g: Graph) -> list[str]:
        return g.propagate_failures()

    result = benchmark.pedantic(run, setup=setup, rounds=10, iterations=1)
    assert len(result) == FAN_OUT


BIG_METADATA = 80_000


@pytest.mark.benchmark(group="metadata-80k-from-json")
def test_from_json_80k_key_metadata(benchmark: Any) -> None:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t", metadata={f"k{i}": i for i in range(BIG_METADATA)})
    data = g.to_json()
    back = benchmark(Graph.from_json, data)
    assert back.to_json() == data


@pytest.mark.benchmark(group="metadata-40k-mark-finished")
def test_mark_finished_40k_key_metadata(benchmark: Any) -> None:
    patch = {f"m{i}": i for i in range(BIG_METADATA // 2)}

    def setup() -> tuple[tuple[Graph], dict[str, Any]]:
        g = Graph()
        with g.mutate() as m:
            m.create_node("task", node_id="t", metadata={"attempt": 1})
        g.claim(1)
        return (g,), {}

    def run(g: Graph) -> bool:
        return g.mark_finished("t", metadata=patch)

    assert benchmark.pedantic(run, setup=setup, rounds=20, iterations=1)
