"""Decision outcomes and the per-call context that shield hooks inspect."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Decision", "ToolCallContext"]


class Decision(StrEnum):
    """What a policy check concluded about one call.

    A ``StrEnum`` so decisions from other shield implementations with the same
    values compare equal (``Decision.HALT == "HALT"``).
    """

    ALLOW = "ALLOW"
    RETRY = "RETRY"
    HALT = "HALT"
    DEGRADE = "DEGRADE"
    QUARANTINE = "QUARANTINE"
    QUEUE = "QUEUE"


@dataclass(frozen=True)
class ToolCallContext:
    """Immutable description of one LLM or tool invocation, handed to every hook."""

    request_id: str
    user_id: str | None = None
    session_id: str | None = None
    tool_name: str | None = None
    model: str | None = None
    endpoint: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
