"""What a memory governor is asked about each call of a chain (docs/containment.md "Memory calls and
memory governance").

``ExecutionContext(memory_governor=...)`` takes any object with ``evaluate(operation, context)``, returning
a decision whose ``denied`` is true to refuse the call (its ``reason`` and ``policy_id`` are reported), and
``notify_after(operation, decision)``, told when an admitted call succeeded — veronica-core's
``MemoryGovernor`` among them. The two arguments are the types below: the reference's field names, with
its enumerations' values (``MemoryAction`` is a ``str`` enum, and the other enumerated fields are plain
strings), so hooks that compare with ``==`` read them unchanged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = ["MemoryAction", "MemoryOperation", "MemoryPolicyContext"]


class MemoryAction(StrEnum):
    """What a memory operation does. A memory read is a ``READ``; the reference's convention maps an
    LLM call to ``WRITE`` and a tool call to ``READ``."""

    READ = "read"
    WRITE = "write"
    RETRIEVE = "retrieve"
    ARCHIVE = "archive"
    CONSOLIDATE = "consolidate"
    DELETE = "delete"
    QUARANTINE = "quarantine"


@dataclass(frozen=True)
class MemoryOperation:
    """One call of the chain, as a memory operation. ``metadata`` (frozen) holds the call's
    ``operation_name`` and ``kind``."""

    action: MemoryAction
    resource_id: str = ""
    agent_id: str = ""
    namespace: str = ""
    content_hash: str = ""
    content_size_bytes: int = 0
    provenance: str = "unknown"
    metadata: Any = field(default_factory=dict)
    timestamp: float = field(default_factory=time.time)

    def __post_init__(self) -> None:
        if not isinstance(self.action, MemoryAction):
            raise InvalidArgumentType(
                f"action must be a MemoryAction, got {type(self.action).__name__}", argument="action"
            )
        size = self.content_size_bytes
        if isinstance(size, bool) or not isinstance(size, int):
            raise InvalidArgumentType(
                f"content_size_bytes must be an int, got {type(size).__name__}", argument="content_size_bytes"
            )
        if size < 0:
            raise InvalidArgument(
                f"content_size_bytes must be >= 0, got {size}", argument="content_size_bytes"
            )
        object.__setattr__(self, "metadata", MappingProxyType(dict(self.metadata)))


@dataclass(frozen=True)
class MemoryPolicyContext:
    """The chain around an operation: ``total_memory_ops_in_chain`` is the chain's step count when the
    call was admitted."""

    operation: MemoryOperation
    chain_id: str = ""
    request_id: str = ""
    trust_level: str = ""
    total_memory_ops_in_chain: int = 0
    total_bytes_written_in_chain: int = 0
    active_quarantine_count: int = 0
    memory_view: str = "local_working"
    execution_mode: str = "live_execution"
    source_role: str = ""
    compactness: Any = None
