"""One daemon thread for every chain timeout: a chain with a timeout must not cost a thread."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable

__all__ = ["Timeouts", "timeouts"]


class Timeouts:
    """Runs callbacks at monotonic deadlines, in deadline order, on one lazily started thread."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int]] = []
        self._callbacks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, delay_s: float, callback: Callable[[], None]) -> int:
        with self._cond:
            handle = next(self._ids)
            self._callbacks[handle] = callback
            heapq.heappush(self._heap, (time.monotonic() + delay_s, handle))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="chainwarden-timeouts", daemon=True)
                self._thread.start()
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
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                deadline, handle = self._heap[0]
                wait = deadline - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
                callback = self._callbacks.pop(handle, None)
            if callback is not None:
                callback()


timeouts = Timeouts()
