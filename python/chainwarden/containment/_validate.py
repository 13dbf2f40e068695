"""Construction-time checks of what an ExecutionContext is given, and the numeric limits of its config.

A collaborator missing a method the containment code calls is refused when the context is built
(``TypeError`` naming the argument and the method), not on the first call or, worse, inside the
timeout thread. Duck-typed objects that have the methods are accepted (docs/containment.md,
"Limits and validation"). Metrics calls are logged and swallowed (docs/design.md §22): telemetry
must never change what a wrapped call returns.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Final

from chainwarden._args import MAX_INT64
from chainwarden.errors import InvalidArgumentType

__all__ = [
    "BREAKER_METHODS",
    "GOVERNOR_METHODS",
    "MAX_COUNT",
    "MAX_TIMEOUT_MS",
    "METRICS_METHODS",
    "PIPELINE_METHODS",
    "LoggedMetrics",
    "check_collaborators",
    "check_identity",
    "require_methods",
]

_log = logging.getLogger("chainwarden.containment")

# Step, retry and retry-override limits: the core counts them in 64 bits.
MAX_COUNT: Final = MAX_INT64
# The longest chain or call timeout (one year): exact in float seconds and in the core's 64-bit
# nanosecond clock, and far below every platform's wait limit.
MAX_TIMEOUT_MS: Final = 365 * 24 * 3600 * 1000

# What the containment code calls on each collaborator.
PIPELINE_METHODS: Final = ("before_llm_call", "before_tool_call", "before_charge", "on_error", "get_events")
BREAKER_METHODS: Final = ("check", "record_success", "record_failure")
METRICS_METHODS: Final = ("record_cost", "record_decision")
GOVERNOR_METHODS: Final = ("evaluate", "notify_after")


def require_methods(value: object, name: str, methods: tuple[str, ...]) -> None:
    """``TypeError`` naming ``name`` and the first of ``methods`` that ``value`` lacks or cannot call."""
    for method in methods:
        if not callable(getattr(value, method, None)):
            raise InvalidArgumentType(
                f"{name} must provide a callable {method}() (needs {', '.join(methods)}); "
                f"got {type(value).__name__}",
                argument=name,
            )


class LoggedMetrics:
    """Forwards every call to the user's metrics object; an exception is logged, never raised."""

    __slots__ = ("_inner",)

    def __init__(self, inner: object) -> None:
        self._inner = inner

    @property
    def inner(self) -> object:
        return self._inner

    def record_cost(self, agent_id: str, cost_usd: float) -> None:
        self._call("record_cost", agent_id, cost_usd)

    def record_decision(self, agent_id: str, decision: str) -> None:
        self._call("record_decision", agent_id, decision)

    def __getattr__(self, method: str) -> Callable[..., None]:
        # Optional metrics methods (record_tokens, record_latency, ...) exist only if the user's
        # object has them, so ``hasattr`` on the wrapper answers as it would on the object.
        if method.startswith("_") or not callable(getattr(self._inner, method, None)):
            raise AttributeError(method)

        def forward(*args: Any) -> None:
            self._call(method, *args)

        return forward

    def _call(self, method: str, *args: Any) -> None:
        try:
            getattr(self._inner, method)(*args)
        except Exception as exc:
            _log.warning(
                "metrics hook %s.%s raised %r", type(self._inner).__name__, method, exc, exc_info=True
            )

    def __repr__(self) -> str:
        return f"LoggedMetrics({self._inner!r})"


def check_identity(agent_identity: object, memory_governor: object, policy_view_holder: object) -> None:
    """The reference's optional collaborators of an ExecutionContext, checked by what is read of them."""
    if agent_identity is not None:
        agent_id = getattr(agent_identity, "agent_id", None)
        if not isinstance(agent_id, str) or not agent_id:
            raise InvalidArgumentType(
                "agent_identity must have a non-empty str agent_id (e.g. veronica-core's AgentIdentity), "
                f"got {type(agent_identity).__name__}",
                argument="agent_identity",
            )
    if memory_governor is not None:
        require_methods(memory_governor, "memory_governor", GOVERNOR_METHODS)
    if policy_view_holder is not None and not hasattr(policy_view_holder, "current"):
        raise InvalidArgumentType(
            f"policy_view_holder must have a current attribute, got {type(policy_view_holder).__name__}",
            argument="policy_view_holder",
        )


def check_collaborators(pipeline: object, circuit_breaker: object, metrics: object) -> LoggedMetrics | None:
    """Checks the collaborators of an ExecutionContext; returns the metrics object to call."""
    if pipeline is not None:
        require_methods(pipeline, "pipeline", PIPELINE_METHODS)
    if circuit_breaker is not None:
        require_methods(circuit_breaker, "circuit_breaker", BREAKER_METHODS)
    if metrics is None:
        return None
    if isinstance(metrics, LoggedMetrics):
        return metrics
    require_methods(metrics, "metrics", METRICS_METHODS)
    return LoggedMetrics(metrics)
