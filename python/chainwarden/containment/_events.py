"""The chain-level event log and the stop reasons of docs/design.md §5 (docs/design.md §5)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Final

from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.types import Decision
from chainwarden.vocab import StopReason

__all__ = ["STOP_REASONS", "EventLog", "stop_event"]

# docs/design.md §5: the core's list, the one definition of the stop reasons.
STOP_REASONS: Final[frozenset[str]] = frozenset(StopReason)

# Enough for any sane chain; a flood of identical limit hits is deduplicated before this matters.
MAX_EVENTS: Final = 1000


def stop_event(stop_reason: str, detail: str, request_id: str, **metadata: Any) -> SafetyEvent:
    return SafetyEvent(
        event_type=stop_reason,
        decision=Decision.HALT,
        reason=detail,
        hook="ExecutionContext",
        request_id=request_id,
        metadata={"stop_reason": stop_reason, **metadata},
    )


class EventLog:
    """Append-only, capped, deduplicated by content: every refused call after a limit is hit
    re-reports the same stop, and the log should show it once."""

    __slots__ = ("_events", "_keys", "_lock")

    def __init__(self) -> None:
        self._events: list[Any] = []
        self._keys: set[tuple[object, ...]] = set()
        self._lock = threading.Lock()

    def append(self, event: Any) -> None:
        self.extend((event,))

    def extend(self, events: Iterable[Any]) -> None:
        with self._lock:
            for event in events:
                key = (event.event_type, str(event.decision), event.reason, event.hook, event.request_id)
                if key in self._keys or len(self._events) >= MAX_EVENTS:
                    continue
                self._keys.add(key)
                self._events.append(event)

    def snapshot(self) -> tuple[Any, ...]:
        with self._lock:
            return tuple(self._events)
