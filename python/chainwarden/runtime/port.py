"""The executor port: every graph, in-process or external, runs through `GraphExecutor.run_graph`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from chainwarden.billing.facts import check_run_id
from chainwarden.runtime.events import AiEvent


def _check_str(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if not value:
        raise ValueError(f"{name} must not be empty")


@dataclass(frozen=True)
class GraphRunRequest:
    graph_id: str  # "<provider>:<name>", e.g. "inproc:agent"
    messages: list[dict[str, Any]]
    model: str
    billing_account_id: str
    virtual_key_id: str
    run_id: str | None = None  # generated when None; the canonical identity of the run
    ingress_request_id: str | None = None  # delivery correlation only, never used for idempotency
    attempt: int = 0

    def __post_init__(self) -> None:
        for name in ("graph_id", "model", "billing_account_id", "virtual_key_id"):
            _check_str(name, getattr(self, name))
        if self.run_id is not None:
            check_run_id(self.run_id)  # docs/design.md §29: it enters every idempotency key
        _check_str("ingress_request_id", self.ingress_request_id, optional=True)
        if not isinstance(self.messages, list) or not all(isinstance(m, dict) for m in self.messages):
            raise TypeError("messages must be a list of dicts")
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int):
            raise TypeError(f"attempt must be an int, got {type(self.attempt).__name__}")
        if self.attempt < 0:
            raise ValueError(f"attempt must not be negative, got {self.attempt}")


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass(frozen=True)
class GraphFinal:
    ok: bool
    run_id: str
    request_id: str
    usage: Usage
    finish_reason: str = "stop"
    error: str | None = None  # an Error code when not ok
    content: str | None = None
    # Why containment refused the call that ended the run (`budget_exceeded`, `insufficient_credits`, ...).
    stop_reason: str | None = None


@dataclass(frozen=True)
class GraphRunResult:
    stream: AsyncIterator[AiEvent]  # exactly one Done, always last; never raises
    final: Awaitable[GraphFinal]  # resolves exactly once; never raises


@runtime_checkable
class GraphExecutor(Protocol):
    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        """Returns at once; the work happens as `stream` is consumed."""
        ...
