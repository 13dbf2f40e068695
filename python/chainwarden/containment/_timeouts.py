"""One daemon thread for every chain timeout: a chain with a timeout must not cost a thread.

The thread must outlive whatever its callbacks do (docs/design.md §22): a callback that raises is
logged at WARNING on ``chainwarden.containment`` and the thread goes on with the next deadline. Should
the thread die anyway, the next ``schedule`` starts a new one.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable
from typing import Final

from chainwarden.containment._validate import MAX_TIMEOUT_MS
from chainwarden.errors import InvalidArgument

__all__ = ["Timeouts", "timeouts"]

_log = logging.getLogger("chainwarden.containment")

# The thread never sleeps longer than this in one wait: a far deadline is re-checked, and no
# platform's lock timeout limit (threading.TIMEOUT_MAX) can be exceeded.
_MAX_WAIT_S: Final = 3600.0


def _name(callback: Callable[[], None]) -> str:
    # Naming the callback must not fail in turn: the thread's life depends on this line.
    try:
        name = getattr(callback, "__qualname__", None)
        return name if isinstance(name, str) else repr(callback)
    except Exception:
        return type(callback).__name__


class Timeouts:
    """Runs callbacks at monotonic deadlines, in deadline order, on one lazily started thread."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int]] = []
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, delay_s: float, callback: Callable[[], None]) -> int:
        """Runs ``callback`` once, ``delay_s`` seconds from now (0 <= delay_s <= MAX_TIMEOUT_MS / 1000)."""
        if not 0.0 <= delay_s <= MAX_TIMEOUT_MS / 1000.0:  # also rejects NaN
            raise InvalidArgument(
                f"delay_s must be in [0, {MAX_TIMEOUT_MS / 1000.0}], got {delay_s!r}", argument="delay_s"
            )
        with self._cond:
            handle = next(self._ids)
            self._callbacks[handle] = callback
            heapq.heappush(self._heap, (time.monotonic() + delay_s, handle))
            thread = self._thread
            if thread is None or not thread.is_alive():
                thread = threading.Thread(target=self._run, name="chainwarden-timeouts", daemon=True)
                thread.start()
                self._thread = thread
            self._cond.notify()
            return handle

    def cancel(self, handle: int) -> None:
        # The heap entry stays until its deadline (then it is skipped), unless dead entries come
        # to outnumber live ones: chains closed long before their timeout must not pile up.
        with self._cond:
            self._callbacks.pop(handle, None)
            heap = self._heap
            if len(heap) > 64 and 2 * len(self._callbacks) < len(heap):
                self._heap = [entry for entry in heap if entry[1] in self._callbacks]
                heapq.heapify(self._heap)

    def _run(self) -> None:
        while True:
            callback = self._next_due()
            try:
                callback()
            except BaseException as exc:
                _log.warning("timeout callback %s raised %r", _name(callback), exc, exc_info=True)
                del exc
            # Drop the reference now: the callback may hold the last route to a context.
            del callback

    def _next_due(self) -> Callable[[], None]:
        """Blocks until a live entry's deadline has passed, then removes and returns its callback."""
        with self._cond:
            while True:
                if not self._heap:
                    self._cond.wait()
                    continue
                deadline, handle = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(min(wait, _MAX_WAIT_S))
                    continue
                heapq.heappop(self._heap)
                callback = self._callbacks.pop(handle, None)
                if callback is not None:
                    return callback


timeouts = Timeouts()
