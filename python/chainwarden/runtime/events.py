"""The events a graph run streams (AiEvent): text, tool calls, usage, the final answer, Done, Error."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

from chainwarden.billing import UsageFact

ErrorCode = Literal[
    "invalid_request", "not_found", "timeout", "aborted", "rate_limit", "internal", "insufficient_credits"
]
ERROR_CODES: frozenset[str] = frozenset(get_args(ErrorCode))


@dataclass(frozen=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = field(default="text_delta", init=False)


@dataclass(frozen=True)
class ToolCallStart:
    tool_call_id: str
    name: str
    arguments: Any
    type: Literal["tool_call_start"] = field(default="tool_call_start", init=False)


@dataclass(frozen=True)
class ToolCallResult:
    tool_call_id: str
    result: Any
    type: Literal["tool_call_result"] = field(default="tool_call_result", init=False)


@dataclass(frozen=True)
class UsageReport:
    """Billing-only: never shown to UI subscribers. ``fact`` must be a ``UsageFact`` (checked here, where
    the executor builds the report). ``usage_missing``: the provider reported nothing the call used (no token
    count, no cost): the fact is billed all the same, without a cost (docs/design.md §30)."""

    fact: UsageFact
    usage_missing: bool = False
    type: Literal["usage_report"] = field(default="usage_report", init=False)

    def __post_init__(self) -> None:
        if not isinstance(self.fact, UsageFact):
            raise TypeError(f"fact must be a UsageFact, got {type(self.fact).__name__}")
        if not isinstance(self.usage_missing, bool):
            raise TypeError(f"usage_missing must be a bool, got {type(self.usage_missing).__name__}")


@dataclass(frozen=True)
class AssistantFinal:
    content: str
    type: Literal["assistant_final"] = field(default="assistant_final", init=False)


@dataclass(frozen=True)
class Done:
    type: Literal["done"] = field(default="done", init=False)


@dataclass(frozen=True)
class Error:
    code: ErrorCode

    type: Literal["error"] = field(default="error", init=False)

    def __post_init__(self) -> None:
        if self.code not in ERROR_CODES:
            raise ValueError(f"unknown error code {self.code!r}; expected one of {sorted(ERROR_CODES)}")


AiEvent = TextDelta | ToolCallStart | ToolCallResult | UsageReport | AssistantFinal | Done | Error
AI_EVENT_TYPES: tuple[type, ...] = (
    TextDelta,
    ToolCallStart,
    ToolCallResult,
    UsageReport,
    AssistantFinal,
    Done,
    Error,
)
