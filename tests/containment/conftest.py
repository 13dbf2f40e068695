"""TEMPORARY: stands in for the native ExecutionGraph until it lands on main."""

from __future__ import annotations

from typing import Any

from chainwarden.containment import _graph
from veronica_core.containment.execution_graph import ExecutionGraph as _ReferenceGraph


class _StandInGraph(_ReferenceGraph):  # type: ignore[misc]
    def begin_node(
        self,
        parent_id: str,
        kind: Any,
        name: str,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
        *,
        running: bool = False,
    ) -> str:
        node_id: str = super().begin_node(parent_id, kind, name, model, metadata)
        if running:
            self.mark_running(node_id)
        return node_id

    def aggregates(self) -> dict[str, Any]:
        result: dict[str, Any] = self.snapshot()["aggregates"]
        return result


if _graph.ExecutionGraph is None:
    _graph.ExecutionGraph = _StandInGraph
