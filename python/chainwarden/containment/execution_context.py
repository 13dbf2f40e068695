"""``chainwarden.containment.execution_context``: the import path of veronica-core's module of the same name
(docs/design.md §42, docs/containment.md "Migrating from veronica-core"). The names live in
``chainwarden.containment``."""

from chainwarden.containment._partials import attach_partial_buffer, get_current_partial_buffer
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
    "CancellationToken",
    "ChainMetadata",
    "ContextSnapshot",
    "ExecutionConfig",
    "ExecutionContext",
    "NodeRecord",
    "WrapOptions",
    "attach_partial_buffer",
    "get_current_partial_buffer",
]
