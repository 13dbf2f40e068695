"""``chainwarden.containment.execution_graph``: the import path of veronica-core's module of the same name
(docs/design.md §42, docs/containment.md "Migrating from veronica-core").

chainwarden's graph keeps its nodes inside the native core (docs/recorder.md) and hands them out as the
dicts of ``ExecutionGraph.snapshot()["nodes"]``; ``Node`` is the typed form of one of them, with the
reference's fields (``Node.from_snapshot(d)``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from chainwarden._core import ExecutionGraph, NodeEvent
from chainwarden.errors import InvalidArgumentType

__all__ = ["ExecutionGraph", "Node", "NodeEvent", "NodeSignature"]

# A node's (kind, name): what divergence detection counts repeats of.
NodeSignature = tuple[str, str]

NodeKind = Literal["llm", "tool", "system", "memory_read", "memory_write"]
NodeStatus = Literal["created", "running", "success", "fail", "halt"]


@dataclass
class Node:
    """One node of an ExecutionGraph as its snapshot shows it (times in Unix milliseconds)."""

    node_id: str
    parent_id: str | None
    kind: NodeKind
    name: str
    start_ts_ms: int
    end_ts_ms: int | None
    status: NodeStatus
    model: str | None
    retries_used: int
    cost_usd: float
    tokens_in: int | None
    tokens_out: int | None
    stop_reason: str | None
    error_class: str | None
    metadata: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, node: Mapping[str, Any]) -> Node:
        """The node of a ``snapshot()["nodes"]`` entry (``KeyError`` naming a missing field)."""
        if not isinstance(node, Mapping):
            raise InvalidArgumentType(
                f"node must be a snapshot's node dict, got {type(node).__name__}", argument="node"
            )
        return cls(**{f.name: node[f.name] for f in fields(cls)})
