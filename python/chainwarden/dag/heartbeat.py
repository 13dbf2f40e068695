"""The lease keeper of a leased `Runner` or a `WorkerPool`: a background thread renewing, every `lease_s / 3`,
the leases of the nodes the worker holds, on every graph it holds some on.

A worker that stops renewing (killed, frozen, cut off) loses its claims after one lease; other workers then
reclaim them (docs/dag.md "Workers"). A node whose renewal finds the lease gone (reclaimed after a pause
longer than the lease) is reported to `on_lost` and no longer renewed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from chainwarden.dag.graph import Graph

_log = logging.getLogger("chainwarden.dag")


class Heartbeat:
    """Renews the leases `worker_id` holds; `stop()` ends the thread (it starts with the first hold)."""

    def __init__(
        self,
        worker_id: str,
        lease_s: float,
        on_lost: Callable[[Graph, list[str]], None] | None = None,
    ) -> None:
        self._worker_id = worker_id
        self._lease_s = lease_s
        self._on_lost = on_lost
        # Graphs by identity (a Graph is not hashable by value), each with the node ids held on it.
        self._held: dict[int, tuple[Graph, set[str]]] = {}
        self._mutex = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def hold(self, graph: Graph, node_ids: Iterable[str]) -> None:
        with self._mutex:
            ids = set(node_ids)
            if not ids:
                return
            self._held.setdefault(id(graph), (graph, set()))[1].update(ids)
            if self._thread is None:
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._run, name=f"chainwarden-heartbeat-{self._worker_id}", daemon=True
                )
                self._thread.start()

    def release(self, graph: Graph, node_id: str) -> None:
        with self._mutex:
            entry = self._held.get(id(graph))
            if entry is not None:
                entry[1].discard(node_id)
                if not entry[1]:
                    del self._held[id(graph)]

    def held(self) -> list[tuple[Graph, list[str]]]:
        with self._mutex:
            return [(graph, sorted(ids)) for graph, ids in self._held.values()]

    def stop(self) -> None:
        with self._mutex:
            thread, self._thread = self._thread, None
            self._held.clear()
        self._stopping.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=self._lease_s)

    def _run(self) -> None:
        while not self._stopping.wait(self._lease_s / 3):
            for graph, ids in self.held():
                try:
                    renewed = graph.heartbeat(ids, worker_id=self._worker_id, lease_s=self._lease_s)
                except Exception:  # a failed renewal must not stop the worker; the next beat tries again
                    _log.warning("heartbeat of worker %s failed", self._worker_id, exc_info=True)
                    continue
                lost = sorted(set(ids) - set(renewed))
                if not lost:
                    continue
                with self._mutex:
                    entry = self._held.get(id(graph))
                    if entry is not None:
                        entry[1].difference_update(lost)
                if self._on_lost is not None:
                    try:
                        self._on_lost(graph, lost)
                    except Exception:  # a hook must not stop the renewals of every other lease
                        _log.warning("on_lost hook of worker %s failed", self._worker_id, exc_info=True)
