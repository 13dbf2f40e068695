"""Any execution context, read one way by the DAG runner and the runtime: chainwarden's `ExecutionContext` or
another with the same calls (veronica-core's). Duck-typed, so neither package imports containment to run
under one (ARCHITECTURE.md "Layering")."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["CallGuard", "decision_name"]


class CallGuard(Protocol):
    """What the DAG runner and the runtime call on a context: the two wraps."""

    def wrap_llm_call(self, fn: Callable[[], Any], options: Any = None) -> Any: ...

    def wrap_tool_call(self, fn: Callable[[], Any], options: Any = None) -> Any: ...


def decision_name(decision: object) -> str:
    """The decision's name ("ALLOW", "HALT", "RETRY", ...), whatever enum class the context returns."""
    value = getattr(decision, "value", decision)
    return str(value).upper()
