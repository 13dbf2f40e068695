"""The lease keeper of a `Runner`: a background thread renewing the leases of the nodes the runner holds.

A worker that stops renewing (killed, frozen, cut off) loses its claims after one lease; other runners then
reclaim them (docs/dag.md "Stores and workers").
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainwarden.dag.graph import Graph

_log = logging.getLogger("chainwarden.dag")


class Heartbeat:
    """Renews every `lease_s / 3` the leases of the ids in `held`; `stop()` ends the thread."""

    def __init__(self, graph: Graph, worker_id: str, lease_s: float) -> None:
        self._graph = graph
        self._worker_id = worker_id
        self._lease_s = lease_s
        self._held: set[str] = set()
        self._mutex = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, node_ids: Iterable[str]) -> None:
        with self._mutex:
            self._held.update(node_ids)
            if self._thread is None and self._held:
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._run, name=f"chainwarden-heartbeat-{self._worker_id}", daemon=True
                )
                self._thread.start()

    def release(self, node_id: str) -> None:
        with self._mutex:
            self._held.discard(node_id)

    def stop(self) -> None:
        with self._mutex:
            thread, self._thread = self._thread, None
            self._held.clear()
        self._stopping.set()
        if thread is not None:
            thread.join(timeout=self._lease_s)

    def _run(self) -> None:
        while not self._stopping.wait(self._lease_s / 3):
            with self._mutex:
                held = sorted(self._held)
            if not held:
                continue
            try:
                self._graph.heartbeat(held, worker_id=self._worker_id, lease_s=self._lease_s)
            except Exception:  # a failed renewal must not stop the runner; the next beat tries again
                _log.warning("heartbeat of worker %s failed", self._worker_id, exc_info=True)
