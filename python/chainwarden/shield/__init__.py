"""Per-call policy: decisions, safety events, the hook pipeline, call windows and circuit breaking."""

from chainwarden.shield.budget_window import BudgetWindowHook
from chainwarden.shield.circuit_breaker import CircuitBreaker, CircuitState, FailurePredicate
from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.hooks import (
    BudgetBoundaryHook,
    EgressBoundaryHook,
    PreDispatchHook,
    RetryBoundaryHook,
    ToolDispatchHook,
)
from chainwarden.shield.pipeline import ShieldPipeline
from chainwarden.shield.policy import PolicyContext, PolicyDecision, RuntimePolicy
from chainwarden.shield.types import Decision, ToolCallContext

__all__ = [
    "BudgetBoundaryHook",
    "BudgetWindowHook",
    "CircuitBreaker",
    "CircuitState",
    "Decision",
    "EgressBoundaryHook",
    "FailurePredicate",
    "PolicyContext",
    "PolicyDecision",
    "PreDispatchHook",
    "RetryBoundaryHook",
    "RuntimePolicy",
    "SafetyEvent",
    "ShieldPipeline",
    "ToolCallContext",
    "ToolDispatchHook",
]
