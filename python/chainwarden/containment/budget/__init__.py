"""Shared budgets: one chain ceiling enforced across processes and hosts (docs/containment.md,
"Shared budgets"; docs/design.md §20). ``ExecutionConfig(budget_backend=...)`` takes any backend of
veronica-core's protocol; ours (Redis, PostgreSQL) add ``settle``."""

from chainwarden.containment.budget._postgres import PostgresBudgetBackend
from chainwarden.containment.budget._protocol import (
    DEFAULT_RESERVATION_TTL_S,
    BudgetBackend,
    BudgetBackendUnavailable,
    SettlingBudgetBackend,
)
from chainwarden.containment.budget._redis import RedisBudgetBackend

__all__ = [
    "DEFAULT_RESERVATION_TTL_S",
    "BudgetBackend",
    "BudgetBackendUnavailable",
    "PostgresBudgetBackend",
    "RedisBudgetBackend",
    "SettlingBudgetBackend",
]
