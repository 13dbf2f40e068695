"""Chain-level recording and containment: the call graph of an agent chain, and ExecutionContext."""

from chainwarden._core import ExecutionGraph, NodeEvent
from chainwarden.containment import budget_allocator, execution_context, execution_graph
from chainwarden.containment._blocks import CallRefused, ChainHalted
from chainwarden.containment._current import current_context
from chainwarden.containment._decorators import contained
from chainwarden.containment._events import STOP_REASONS
from chainwarden.containment._partials import attach_partial_buffer, get_current_partial_buffer
from chainwarden.containment._report import report_cost
from chainwarden.containment.budget import (
    BudgetBackend,
    BudgetBackendUnavailable,
    PostgresBudgetBackend,
    RedisBudgetBackend,
)
from chainwarden.containment.budget_allocator import (
    AllocationResult,
    BudgetAllocator,
    DynamicAllocator,
    FairShareAllocator,
    WeightedAllocator,
)
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.partial import PartialBufferOverflow, PartialResultBuffer
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
    "AllocationResult",
    "BudgetAllocator",
    "BudgetBackend",
    "BudgetBackendUnavailable",
    "CallRefused",
    "CancellationToken",
    "ChainHalted",
    "ChainMetadata",
    "ContextSnapshot",
    "DynamicAllocator",
    "ExecutionConfig",
    "ExecutionContext",
    "ExecutionGraph",
    "FairShareAllocator",
    "NodeEvent",
    "NodeRecord",
    "PartialBufferOverflow",
    "PartialResultBuffer",
    "PostgresBudgetBackend",
    "RedisBudgetBackend",
    "WeightedAllocator",
    "WrapOptions",
    "attach_partial_buffer",
    "budget_allocator",
    "contained",
    "current_context",
    "execution_context",
    "execution_graph",
    "get_current_partial_buffer",
    "report_cost",
]
