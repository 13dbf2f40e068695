"""The executor port: every graph, in-process or external, runs through `GraphExecutor.run_graph`."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from chainwarden._chain_context import Tags, checked_attributes, checked_tags, context_of
from chainwarden.billing.facts import check_run_id
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.runtime.events import AiEvent


def _check_str(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be a str, got {type(value).__name__}", argument=name)
    if not value:
        raise InvalidArgument(f"{name} must not be empty", argument=name)


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
    # The run's context (docs/containment.md "Context that travels"): kept on its run record, given to
    # its ExecutionContext (in-process runs), checked and frozen like ChainMetadata's.
    user_id: str | None = field(default=None, kw_only=True)
    session_id: str | None = field(default=None, kw_only=True)
    tags: Tags = field(default=(), kw_only=True)
    attributes: Mapping[str, Any] | None = field(default=None, kw_only=True)

    def context(self) -> dict[str, Any] | None:
        """The run's context as plain JSON values (what its run record keeps), None when it has none."""
        return context_of(self.user_id, self.session_id, self.tags, self.attributes) or None

    def __post_init__(self) -> None:
        _check_str("user_id", self.user_id, optional=True)
        _check_str("session_id", self.session_id, optional=True)
        object.__setattr__(self, "tags", checked_tags(self.tags))
        if self.attributes is not None:
            object.__setattr__(self, "attributes", checked_attributes(self.attributes))
        for name in ("graph_id", "model", "billing_account_id", "virtual_key_id"):
            _check_str(name, getattr(self, name))
        if self.run_id is not None:
            check_run_id(self.run_id)  # docs/design.md §29: it enters every idempotency key
        _check_str("ingress_request_id", self.ingress_request_id, optional=True)
        if not isinstance(self.messages, list) or not all(isinstance(m, dict) for m in self.messages):
            raise InvalidArgumentType("messages must be a list of dicts", argument="messages")
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int):
            raise InvalidArgumentType(
                f"attempt must be an int, got {type(self.attempt).__name__}", argument="attempt"
            )
        if self.attempt < 0:
            raise InvalidArgument(f"attempt must not be negative, got {self.attempt}", argument="attempt")


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
