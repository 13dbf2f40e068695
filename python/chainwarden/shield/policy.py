"""The check protocol between ExecutionContext and runtime policies such as CircuitBreaker."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = ["PolicyContext", "PolicyDecision", "RuntimePolicy"]


@dataclass
class PolicyContext:
    """Chain state a policy may look at; policies ignore what they do not need."""

    cost_usd: float = 0.0
    step_count: int = 0
    entity_id: str = ""
    chain_id: str = ""
    timestamp: float = field(default_factory=time.time)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class PolicyDecision:
    allowed: bool
    policy_type: str
    reason: str = ""


@runtime_checkable
class RuntimePolicy(Protocol):
    def check(self, context: PolicyContext) -> PolicyDecision: ...
