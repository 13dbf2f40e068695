"""JSON encoders side by side: the DAG's `to_json` / `from_json` and the call graph's
`snapshot_json` against orjson on the same data, in one session. `extra_info["bytes"]` is the document
size, so throughput is `bytes / median`:

    .venv/bin/pytest benches/bench_json.py --benchmark-only -q --benchmark-columns=min,median,rounds
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

from chainwarden import ExecutionGraph
from chainwarden.dag import Graph

CHAT_TURNS = 10_000
SNAPSHOT_SIZES = [1_000, 10_000, 100_000]


def chat() -> Graph:
    g = Graph()
    with g.mutate() as m:
        previous: str | None = None
        for turn in range(CHAT_TURNS):
            for node_type, text in (("user_message", "question"), ("agent_message", "answer")):
                n = m.create_node(
                    node_type, "finished", content=f"{text} {turn}", metadata={"turn": turn, "p": 0.5}
                )
                if previous is not None:
                    m.create_edge(previous, n, "sequence")
                previous = n
    return g


@pytest.fixture(scope="module")
def chat_json() -> tuple[Graph, bytes]:
    g = chat()
    return g, g.to_json()


@pytest.mark.benchmark(group="json: DAG document out, 20k-node chat")
@pytest.mark.parametrize("impl", ["chainwarden", "orjson"])
def test_dag_to_json(benchmark: Any, impl: str, chat_json: tuple[Graph, bytes]) -> None:
    g, data = chat_json
    benchmark.extra_info["bytes"] = len(data)
    if impl == "chainwarden":
        assert benchmark(g.to_json) == data
    else:
        doc = orjson.loads(data)
        assert orjson.loads(benchmark(orjson.dumps, doc)) == doc


@pytest.mark.benchmark(group="json: DAG document in, 20k-node chat")
@pytest.mark.parametrize("impl", ["chainwarden", "orjson"])
def test_dag_from_json(benchmark: Any, impl: str, chat_json: tuple[Graph, bytes]) -> None:
    _, data = chat_json
    benchmark.extra_info["bytes"] = len(data)
    if impl == "chainwarden":
        assert benchmark(Graph.from_json, data).to_json() == data
    else:
        assert len(benchmark(orjson.loads, data)["nodes"]) == 2 * CHAT_TURNS


@pytest.mark.parametrize("nodes", SNAPSHOT_SIZES)
@pytest.mark.parametrize("impl", ["chainwarden", "orjson"])
def test_snapshot_json(benchmark: Any, impl: str, nodes: int) -> None:
    benchmark.group = f"json: call-graph snapshot at {nodes:,} nodes"
    g = ExecutionGraph()
    root = g.create_root("run")
    for _ in range(nodes):
        node = g.begin_node(root, "llm", "step")
        g.mark_running(node)
        g.mark_success(node, 0.001, 10, 20)
    if impl == "chainwarden":
        out = benchmark(g.snapshot_json)
        # Byte-identical to json.dumps of the snapshot, apart from the snapshot's own timestamp.
        assert json.loads(out)["nodes"] == g.snapshot()["nodes"]
    else:
        snap = g.snapshot()  # prebuilt: only the encoding is timed
        out = benchmark(orjson.dumps, snap)
    benchmark.extra_info["bytes"] = len(out)
