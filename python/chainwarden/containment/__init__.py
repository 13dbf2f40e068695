"""Chain-level recording and containment: the call graph of an agent chain."""

from chainwarden._core import ExecutionGraph, NodeEvent

__all__ = ["ExecutionGraph", "NodeEvent"]
