"""BudgetWindowHook: a sliding-window ceiling on the number of LLM calls."""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Final

from chainwarden._args import finite_non_negative, strict_int
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.shield.types import Decision, ToolCallContext

__all__ = ["MAX_CALLS", "BudgetWindowHook"]

MAX_CALLS: Final = 2**60


class BudgetWindowHook:
    """Counts calls within the last ``window_seconds``.

    Below ``degrade_threshold * max_calls`` it has no opinion; from there it answers DEGRADE
    (a hint to fall back to a cheaper model) and at ``max_calls`` HALT. Refused calls still
    occupy the window so a caller hammering a full window stays refused.
    """

    def __init__(
        self,
        max_calls: int,
        window_seconds: float = 60.0,
        degrade_threshold: float = 0.8,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # The window's memory is bounded by a deque sized from max_calls; 2**60 keeps that size a
        # valid length (docs/containment.md, "Limits and validation").
        strict_int(max_calls, "max_calls", minimum=1, maximum=MAX_CALLS)
        window = finite_non_negative(window_seconds, "window_seconds")
        if window == 0.0:
            raise InvalidArgument("window_seconds must be > 0", argument="window_seconds")
        threshold = finite_non_negative(degrade_threshold, "degrade_threshold")
        if not 0.0 < threshold <= 1.0:
            raise InvalidArgument(
                f"degrade_threshold must be in (0, 1], got {degrade_threshold!r}",
                argument="degrade_threshold",
            )
        if not callable(clock):
            raise InvalidArgumentType(f"clock must be callable, got {type(clock).__name__}", argument="clock")
        self.max_calls = max_calls
        self.window_seconds = window
        self.degrade_threshold = threshold
        self._clock = clock
        # Bounded memory under overload: the oldest stamps would leave the window first anyway.
        self._stamps: deque[float] = deque(maxlen=max_calls * 4 + 64)
        self._lock = threading.Lock()

    def count(self) -> int:
        """Calls currently inside the window."""
        with self._lock:
            self._prune(self._clock())
            return len(self._stamps)

    def _prune(self, now: float) -> None:
        cutoff = now - self.window_seconds
        stamps = self._stamps
        while stamps and stamps[0] < cutoff:
            stamps.popleft()

    def before_llm_call(self, ctx: ToolCallContext) -> Decision | None:
        now = self._clock()
        with self._lock:
            self._prune(now)
            seen = len(self._stamps)
            self._stamps.append(now)
        if seen >= self.max_calls:
            return Decision.HALT
        if seen >= self.degrade_threshold * self.max_calls:
            return Decision.DEGRADE
        return None
