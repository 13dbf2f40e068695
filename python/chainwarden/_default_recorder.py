"""``chainwarden.default_recorder()``: where calls made outside any ``ExecutionContext`` are recorded.

``chainwarden.instrument()`` (docs/integrations.md, "One line: chainwarden.instrument()") records every
provider and LangChain call of the process. Inside an ``ExecutionContext`` they are contained calls of it;
outside any, they land here: one process-wide ``ExecutionGraph`` (created on first use, root ``default``, at
most ``DEFAULT_MAX_NODES`` nodes kept, docs/design.md §27), exportable like any other graph
(``snapshot_json``, ``chainwarden.otel.instrument``, ``chainwarden render``).
"""

from __future__ import annotations

import threading
from typing import Final

from chainwarden._core import ExecutionGraph

__all__ = ["DEFAULT_MAX_NODES", "default_recorder", "default_root"]

DEFAULT_MAX_NODES: Final = 100_000

_lock = threading.Lock()
_graph: ExecutionGraph | None = None


def default_recorder() -> ExecutionGraph:
    """The process-wide graph of calls recorded outside any context (the same object on every call)."""
    global _graph  # noqa: PLW0603 - one per process, by design
    graph = _graph
    if graph is None:
        with _lock:
            if _graph is None:
                created = ExecutionGraph(chain_id="default", max_nodes=DEFAULT_MAX_NODES)
                created.create_root("default")
                _graph = created
            graph = _graph
    return graph


def default_root(graph: ExecutionGraph) -> str:
    """The node new calls hang under: the graph's root (a graph passed in without one gets it now)."""
    root = graph.root_id
    if root is None:
        with _lock:
            root = graph.root_id
            if root is None:
                root = graph.create_root("default")
    return root
