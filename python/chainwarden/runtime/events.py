"""The events a graph run streams (AiEvent): text, tool calls, usage, the final answer, Done, Error.

Every UI event carries ``seq``, its position in the run's log (1 for the first; 0 until the relay publishes
it): a client that lost its connection attaches again after the last position it saw
(docs/runtime.md "Reconnect, resume and retry"). ``seq`` is not part of an event's value: it is left out of
``==`` and ``repr``."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from chainwarden.billing import UsageFact
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.vocab import RunErrorCode

ErrorCode = Literal[
    "invalid_request", "not_found", "timeout", "aborted", "rate_limit", "internal", "insufficient_credits"
]
# The words are `vocab.RunErrorCode`'s; the `Literal` stays for type checkers of `Error(code=...)`
# (tests/test_vocab.py holds them equal).
ERROR_CODES: frozenset[str] = frozenset(c.value for c in RunErrorCode)


@dataclass(frozen=True)
class TextDelta:
    text: str
    type: Literal["text_delta"] = field(default="text_delta", init=False)
    seq: int = field(default=0, repr=False, compare=False, kw_only=True)


@dataclass(frozen=True)
class ToolCallStart:
    tool_call_id: str
    name: str
    arguments: Any
    type: Literal["tool_call_start"] = field(default="tool_call_start", init=False)
    seq: int = field(default=0, repr=False, compare=False, kw_only=True)


@dataclass(frozen=True)
class ToolCallResult:
    tool_call_id: str
    result: Any
    type: Literal["tool_call_result"] = field(default="tool_call_result", init=False)
    seq: int = field(default=0, repr=False, compare=False, kw_only=True)


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
            raise InvalidArgumentType(
                f"fact must be a UsageFact, got {type(self.fact).__name__}", argument="fact"
            )
        if not isinstance(self.usage_missing, bool):
            raise InvalidArgumentType(
                f"usage_missing must be a bool, got {type(self.usage_missing).__name__}",
                argument="usage_missing",
            )


@dataclass(frozen=True)
class AssistantFinal:
    content: str
    type: Literal["assistant_final"] = field(default="assistant_final", init=False)
    seq: int = field(default=0, repr=False, compare=False, kw_only=True)


@dataclass(frozen=True)
class Done:
    type: Literal["done"] = field(default="done", init=False)
    seq: int = field(default=0, repr=False, compare=False, kw_only=True)


@dataclass(frozen=True)
class Error:
    code: ErrorCode

    type: Literal["error"] = field(default="error", init=False)
    seq: int = field(default=0, repr=False, compare=False, kw_only=True)

    def __post_init__(self) -> None:
        if self.code not in ERROR_CODES:
            raise InvalidArgument(
                f"unknown error code {self.code!r}; expected one of {sorted(ERROR_CODES)}", argument="unknown"
            )


AiEvent = TextDelta | ToolCallStart | ToolCallResult | UsageReport | AssistantFinal | Done | Error
#: What UI subscribers see: every event but usage reports, each at its position `seq`.
UiEvent = TextDelta | ToolCallStart | ToolCallResult | AssistantFinal | Done | Error
AI_EVENT_TYPES: tuple[type, ...] = (
    TextDelta,
    ToolCallStart,
    ToolCallResult,
    UsageReport,
    AssistantFinal,
    Done,
    Error,
)


# The UI events as they are kept in a run's log (docs/runtime.md "Reconnect, resume and retry"): the event's
# type and its fields as strict JSON. Tool arguments and results are the executor's values: what JSON cannot
# carry (an object, NaN) is kept as its text, so the log always reads back.
UI_EVENT_TYPES: dict[str, type] = {
    "text_delta": TextDelta,
    "tool_call_start": ToolCallStart,
    "tool_call_result": ToolCallResult,
    "assistant_final": AssistantFinal,
    "done": Done,
    "error": Error,
}


def encode_event(event: UiEvent) -> str:
    """The fields of a UI event (not its type, nor its position) as strict JSON text."""
    if isinstance(event, TextDelta):
        body: dict[str, Any] = {"text": event.text}
    elif isinstance(event, ToolCallStart):
        body = {
            "tool_call_id": event.tool_call_id,
            "name": event.name,
            "arguments": _jsonable(event.arguments),
        }
    elif isinstance(event, ToolCallResult):
        body = {"tool_call_id": event.tool_call_id, "result": _jsonable(event.result)}
    elif isinstance(event, AssistantFinal):
        body = {"content": event.content}
    elif isinstance(event, Error):
        body = {"code": event.code}
    elif isinstance(event, Done):
        body = {}
    else:
        raise InvalidArgumentType(f"{type(event).__name__} is not a UI event", argument="event")
    # ASCII escapes: a lone surrogate in a text stays valid JSON and encodable by every database driver.
    return json.dumps(body, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def decode_event(kind: str, body: str, seq: int) -> UiEvent:
    """A UI event read back from a run's log, at its position ``seq``."""
    cls = UI_EVENT_TYPES.get(kind)
    if cls is None:
        raise InvalidArgument(f"unknown event type {kind!r} in a run's log", argument="kind")
    event: UiEvent = cls(**json.loads(body), seq=seq)
    return event


def _jsonable(value: Any, depth: int = 0) -> Any:
    """``value`` as strict JSON data: what JSON cannot carry becomes its text (cut to 10,000 characters)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if depth < 64 and isinstance(value, Mapping):
        return {str(k): _jsonable(v, depth + 1) for k, v in value.items()}
    if depth < 64 and isinstance(value, list | tuple):
        return [_jsonable(v, depth + 1) for v in value]
    return repr(value)[:10_000]
