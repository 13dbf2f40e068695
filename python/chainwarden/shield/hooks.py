"""Structural protocols for the hook points a ShieldPipeline consults.

A hook returning ``None`` has no opinion; the pipeline treats that as ALLOW.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from chainwarden.shield.types import Decision, ToolCallContext

__all__ = [
    "BudgetBoundaryHook",
    "EgressBoundaryHook",
    "PreDispatchHook",
    "RetryBoundaryHook",
    "ToolDispatchHook",
]


@runtime_checkable
class PreDispatchHook(Protocol):
    def before_llm_call(self, ctx: ToolCallContext) -> Decision | None: ...


@runtime_checkable
class ToolDispatchHook(Protocol):
    def before_tool_call(self, ctx: ToolCallContext) -> Decision | None: ...


@runtime_checkable
class EgressBoundaryHook(Protocol):
    def before_egress(self, ctx: ToolCallContext, url: str, method: str) -> Decision | None: ...


@runtime_checkable
class RetryBoundaryHook(Protocol):
    def on_error(self, ctx: ToolCallContext, err: BaseException) -> Decision | None: ...


@runtime_checkable
class BudgetBoundaryHook(Protocol):
    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision | None: ...
