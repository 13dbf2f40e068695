"""The DAG test suite again, on store-bound graphs: every `Graph()` a test creates lives in a fresh store, and
after the test a fresh `Store` loads each of them to an equal `to_json()` (events included)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from store_urls import KINDS, new_url

from chainwarden.dag import Store, StoredGraph

sys.path.insert(0, str(Path(__file__).parent.parent))

import test_dag_compress
import test_dag_context
import test_dag_gating
import test_dag_leaves
import test_dag_markers
import test_dag_mutations
import test_dag_propagation
import test_dag_runner
import test_dag_state

MODULES: list[ModuleType] = [
    test_dag_compress,
    test_dag_context,
    test_dag_gating,
    test_dag_leaves,
    test_dag_markers,
    test_dag_mutations,
    test_dag_propagation,
    test_dag_runner,
    test_dag_state,
]

for _module in MODULES:
    for _name in dir(_module):
        if _name.startswith("test_"):
            globals()[f"test_{_module.__name__[len('test_dag_') :]}__{_name[len('test_') :]}"] = getattr(
                _module, _name
            )


@pytest.fixture(autouse=True, params=KINDS)
def stored_graphs(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    url = new_url(str(request.param), tmp_path)
    store = Store.open(url)
    made: list[StoredGraph] = []

    class Graph(StoredGraph):
        """Stands in for `chainwarden.dag.Graph` in the suite's modules: a new graph in the store."""

        def __new__(cls, *, graph_id: str | None = None) -> Any:  # returns a StoredGraph (no __init__)
            graph = store.create_graph(graph_id)
            made.append(graph)
            return graph

    for module in MODULES:
        if hasattr(module, "Graph"):
            monkeypatch.setattr(module, "Graph", Graph)
    yield
    with Store.open(url) as fresh:
        for graph in made:
            loaded = fresh.load(graph.graph_id)
            assert loaded.version == graph.version
            assert loaded.to_json() == graph.to_json()
            assert loaded.check_invariants() is None
    store.close()
