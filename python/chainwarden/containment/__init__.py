"""Chain-level recording and containment: the call graph of an agent chain, and ExecutionContext."""

from chainwarden._core import ExecutionGraph, NodeEvent
from chainwarden.containment._blocks import CallRefused, ChainHalted
from chainwarden.containment._current import contained, current_context
from chainwarden.containment._events import STOP_REASONS
from chainwarden.containment._report import report_cost
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import (
    CancellationToken,
    ChainMetadata,
    ContextSnapshot,
    ExecutionConfig,
    NodeRecord,
    WrapOptions,
)

__all__ = [
    "STOP_REASONS",
    "CallRefused",
    "CancellationToken",
    "ChainHalted",
    "ChainMetadata",
    "ContextSnapshot",
    "ExecutionConfig",
    "ExecutionContext",
    "ExecutionGraph",
    "NodeEvent",
    "NodeRecord",
    "WrapOptions",
    "contained",
    "current_context",
    "report_cost",
]
