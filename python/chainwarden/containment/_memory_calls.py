"""``wrap_memory_call``: a memory read or write as a contained call (docs/design.md §43, docs/containment.md
"Memory calls and memory governance"). It runs on the same paths as LLM and tool calls; what differs by
kind is decided by the core (``CallKind.consults_pipeline``, ``CallKind.is_llm``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final, Literal

from chainwarden._core import CallKind
from chainwarden.containment._fast import sync_wrap
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

SyncWrap = Callable[["ExecutionContext", Callable[[], Any], WrapOptions | None], Decision]

__all__ = ["MemoryKind", "memory_kind", "memory_wrap"]

MemoryKind = Literal["memory_read", "memory_write"]

_KINDS: Final = {"memory_read": CallKind.MEMORY_READ, "memory_write": CallKind.MEMORY_WRITE}
_WRAPS: Final = {name: sync_wrap(kind) for name, kind in _KINDS.items()}


def memory_kind(kind: object) -> CallKind:
    """The call kind of ``"memory_read"`` / ``"memory_write"``; ``ValueError`` (``TypeError`` for a
    non-str) names the argument otherwise."""
    if not isinstance(kind, str):
        raise InvalidArgumentType(
            f"kind must be 'memory_read' or 'memory_write', got {type(kind).__name__}", argument="kind"
        )
    found = _KINDS.get(kind)
    if found is None:
        raise InvalidArgument(f"kind must be 'memory_read' or 'memory_write', got {kind!r}", argument="kind")
    return found


def memory_wrap(kind: object) -> SyncWrap:
    """The sync wrap of a memory call of ``kind`` (checked as ``memory_kind`` does)."""
    return _WRAPS[memory_kind(kind).value]
