"""`WorkerPool`: a long-running worker serving every graph of a store (docs/dag.md "Workers").

It claims only as many nodes as it has free execution slots, across the graphs whose work summary shows
claimable nodes or run-out leases (the store's work index), runs up to `concurrency` executions at once
(threads for sync executors, tasks on one event loop for async ones), renews its leases while they run, and
applies each result as one committed change. It wakes when another process commits claimable work
(PostgreSQL `LISTEN`/`NOTIFY`) or every `poll_s` (SQLite, and as a safety net). Leases are timed by the
database's clock (docs/design.md §33), so a worker whose clock is off neither steals live leases nor keeps
dead ones. `stop()` (or SIGTERM / SIGINT in `chainwarden worker`) claims nothing more, lets running executions
finish within `lease_s` and gives back, unfinished and without counting an attempt, what could not finish.

Claiming, executing and applying are the steps a `Runner` takes too (`dag/execution.py`).
"""

from __future__ import annotations

import asyncio
import logging
import math
import queue
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from chainwarden.dag.containment import WrapOptionsFactory
from chainwarden.dag.errors import DagError, invalid_argument
from chainwarden.dag.execution import Context, Executor, Executors, Node, complete
from chainwarden.dag.heartbeat import Heartbeat
from chainwarden.dag.result import ExecutionResult
from chainwarden.dag.runner import default_worker_id
from chainwarden.dag.store import Store, StoredGraph, StoreError
from chainwarden.errors import InvalidArgumentType, InvalidState

_log = logging.getLogger("chainwarden.dag")

#: Loaded graphs kept between claims; the least recently used without executions in flight go first.
_GRAPHS_KEPT = 256
#: How many graphs with work one look at the index returns (a random sample when more have work).
_INDEX_SAMPLE = 64


@dataclass(frozen=True, slots=True)
class PoolStats:
    """What a pool did so far: results applied (`executed`, by outcome and by graph), expired leases it
    reclaimed, results refused because the lease was lost, nodes given back unfinished at a stop, errors it
    survived (a store it could not reach, a result it could not apply), and executions in flight now."""

    executed: int = 0
    outcomes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    by_graph: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    reclaimed: int = 0
    lost_leases: int = 0
    released: int = 0
    errors: int = 0
    running: int = 0


class _Wake:
    """A wake-up flag safe to set from a signal handler (a re-entrant lock: the handler may run while the
    pool's own thread holds it); a wake-up lost to that race costs at most one `poll_s`."""

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.RLock())
        self._flag = False

    def set(self) -> None:
        with self._cond:
            self._flag = True
            self._cond.notify_all()

    def wait_and_clear(self, timeout: float) -> None:
        with self._cond:
            if not self._flag:
                self._cond.wait(timeout)
            self._flag = False


def _number(value: object, name: str, *, low: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise invalid_argument(f"{name} must be a number of seconds > {low:g}", argument=name)
    if not low < value < 1e9:
        raise invalid_argument(f"{name} must be a number of seconds > {low:g}", argument=name)
    return float(value)


class WorkerPool:
    """Serves the claimable work of every graph of `store` (or of `graph_ids`) until stopped."""

    def __init__(
        self,
        store: Store,
        executors: Mapping[str, Executor],
        *,
        worker_id: str | None = None,
        concurrency: int = 4,
        lease_s: float = 30.0,
        graph_ids: Iterable[str] | None = None,
        poll_s: float = 1.0,
        execution_context: object | None = None,
        wrap_options: WrapOptionsFactory | None = None,
    ) -> None:
        if not isinstance(store, Store):
            raise InvalidArgumentType(
                f"store must be a chainwarden.dag.Store, not {type(store).__name__}", argument="store"
            )
        if worker_id is not None and (not isinstance(worker_id, str) or not worker_id):
            raise invalid_argument("worker_id must be a non-empty string or None", argument="worker_id")
        if (
            isinstance(concurrency, bool)
            or not isinstance(concurrency, int)
            or not 1 <= concurrency <= 10_000
        ):
            raise invalid_argument("concurrency must be an int between 1 and 10000", argument="concurrency")
        self.lease_s = _number(lease_s, "lease_s")
        self.poll_s = _number(poll_s, "poll_s")
        if graph_ids is not None:
            if isinstance(graph_ids, (str, bytes)) or not isinstance(graph_ids, Iterable):
                raise invalid_argument(
                    "graph_ids must be an iterable of graph id strings or None", argument="graph_ids"
                )
            graph_ids = list(graph_ids)
            if not graph_ids or not all(isinstance(g, str) and g for g in graph_ids):
                raise invalid_argument(
                    "graph_ids must be a non-empty iterable of graph id strings or None", argument="graph_ids"
                )
        self._executors = Executors(executors, execution_context, wrap_options)
        self.worker_id = worker_id or default_worker_id()
        self.concurrency = concurrency
        self.graph_ids: tuple[str, ...] | None = None if graph_ids is None else tuple(graph_ids)
        self._store = store
        self._mutex = threading.Lock()
        self._wake = _Wake()
        self._stop_requested = False
        self._running = False
        self._graphs: dict[str, StoredGraph] = {}
        self._used: dict[str, float] = {}
        # (graph id, node id) -> the async task running it (None for a thread).
        self._inflight: dict[tuple[str, str], asyncio.Future[Any] | None] = {}
        self._applying: set[tuple[str, str]] = set()
        self._counts: dict[str, Any] = {}
        self._outcomes: dict[str, int] = {}
        self._by_graph: dict[str, int] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        # Sync executions wait here for one of `concurrency` threads (kept for the whole run).
        self._slots: queue.SimpleQueue[tuple[StoredGraph, Node, Context] | None] = queue.SimpleQueue()
        self._heartbeat = Heartbeat(self.worker_id, self.lease_s, on_lost=self._lost)

    # ---- public ----

    @property
    def stats(self) -> PoolStats:
        with self._mutex:
            return PoolStats(
                executed=self._counts.get("executed", 0),
                outcomes=MappingProxyType(dict(self._outcomes)),
                by_graph=MappingProxyType(dict(self._by_graph)),
                reclaimed=self._counts.get("reclaimed", 0),
                lost_leases=self._counts.get("lost_leases", 0),
                released=self._counts.get("released", 0),
                errors=self._counts.get("errors", 0),
                running=len(self._inflight),
            )

    def stop(self) -> None:
        """Graceful stop, from any thread or a signal handler: claim nothing more, let running executions
        finish within `lease_s`, give back what could not finish; `run()` then returns. A stopped pool stays
        stopped."""
        self._stop_requested = True
        self._wake.set()

    def run(self, *, until_idle: bool = False) -> PoolStats:
        """Serves until `stop()` (or, with `until_idle=True`, until no graph it serves has claimable work, an
        expired lease or a node running under a lease, and nothing runs here); returns the stats."""
        if not isinstance(until_idle, bool):
            raise invalid_argument("until_idle must be a bool", argument="until_idle")
        with self._mutex:
            if self._running:
                raise InvalidState(f"worker pool {self.worker_id} is already running")
            self._running = True
        _log.info(
            "worker pool %s started: concurrency=%d lease_s=%g graphs=%s",
            self.worker_id,
            self.concurrency,
            self.lease_s,
            "all" if self.graph_ids is None else list(self.graph_ids),
        )
        done = threading.Event()
        self._open_slots()
        listener = self._store._listen()
        listening = None
        if listener is not None:
            listening = threading.Thread(
                target=self._listen,
                args=(listener, done),
                name=f"chainwarden-listen-{self.worker_id}",
                daemon=True,
            )
            listening.start()
        try:
            while not self._stop_requested:
                claimed, idle = self._fill()
                if until_idle and idle and self._in_flight() == 0:
                    break
                if claimed and self._in_flight() < self.concurrency:
                    continue  # there may be more: look again at once
                self._wake.wait_and_clear(self.poll_s)
        finally:
            done.set()
            self._shutdown()
            self._close_slots()
            if listening is not None:
                listening.join(timeout=2 * self.poll_s + 1)
            listener is not None and listener.close()
            with self._mutex:
                self._running = False
            stats = self.stats
            _log.info(
                "worker pool %s stopped: executed=%d reclaimed=%d lost_leases=%d released=%d errors=%d",
                self.worker_id,
                stats.executed,
                stats.reclaimed,
                stats.lost_leases,
                stats.released,
                stats.errors,
            )
        return self.stats

    # ---- claiming ----

    def _count(self, name: str, n: int = 1) -> None:
        with self._mutex:
            self._counts[name] = self._counts.get(name, 0) + n

    def _in_flight(self) -> int:
        with self._mutex:
            return len(self._inflight)

    def _fill(self) -> tuple[int, bool]:
        """Claims into the free slots; (how many were claimed, whether the index showed no work at all)."""
        free = self.concurrency - self._in_flight()
        if free <= 0:
            return 0, False
        try:
            index = self._store._work(self.graph_ids, max(_INDEX_SAMPLE, free))
        except StoreError as exc:
            self._count("errors")
            _log.warning("worker pool %s: cannot read the work index: %s", self.worker_id, exc)
            return 0, False
        claimed_total = 0
        for work in index.graphs:
            if free <= 0 or self._stop_requested:
                break
            claimed = self._claim(work.graph_id, free)
            free -= len(claimed)
            claimed_total += len(claimed)
        self._evict()
        return claimed_total, not index.graphs and not index.leased

    def _graph(self, graph_id: str) -> StoredGraph:
        graph = self._graphs.get(graph_id)
        if graph is None:
            graph = self._store.load(graph_id)
            self._graphs[graph_id] = graph
        self._used[graph_id] = time.monotonic()
        return graph

    def _evict(self) -> None:
        if len(self._graphs) <= _GRAPHS_KEPT:
            return
        with self._mutex:
            busy = {graph_id for graph_id, _ in self._inflight}
        for graph_id in sorted(self._used, key=self._used.__getitem__):
            if len(self._graphs) <= _GRAPHS_KEPT:
                break
            if graph_id not in busy:
                del self._graphs[graph_id], self._used[graph_id]

    def _claim(self, graph_id: str, limit: int) -> list[str]:
        try:
            graph = self._graph(graph_id)
            reclaimed, _, claimed = graph._claim_leased(limit, self.worker_id, self.lease_s)
        except (StoreError, DagError) as exc:
            self._count("errors")
            _log.warning("worker pool %s: cannot claim on graph %s: %s", self.worker_id, graph_id, exc)
            return []
        if reclaimed:
            self._count("reclaimed", len(reclaimed))
            _log.info(
                "worker pool %s reclaimed expired leases on graph %s: %s", self.worker_id, graph_id, reclaimed
            )
        if not claimed:
            return claimed
        _log.debug("worker pool %s claimed on graph %s: %s", self.worker_id, graph_id, claimed)
        self._heartbeat.hold(graph, claimed)
        for node_id in claimed:
            self._start(graph, node_id)
        return claimed

    # ---- executing ----

    def _start(self, graph: StoredGraph, node_id: str) -> None:
        key = (graph.graph_id, node_id)
        try:
            node, context = self._executors.prepare(graph, node_id)
        except Exception as exc:  # a node we hold must still leave `running`
            with self._mutex:
                self._inflight[key] = None
            self._finish(graph, node_id, ExecutionResult.errored(f"{type(exc).__name__}: {exc}"))
            return
        if self._executors.is_async(node["node_type"]):
            loop = self._event_loop()
            with self._mutex:
                self._inflight[key] = None
                future = asyncio.run_coroutine_threadsafe(self._arun(graph, node, context), loop)
                self._inflight[key] = future  # type: ignore[assignment]
            return
        with self._mutex:
            self._inflight[key] = None
        self._slots.put((graph, node, context))

    def _serve_slot(self) -> None:
        """One execution slot's thread: runs sync executions until told to stop (None)."""
        while (job := self._slots.get()) is not None:
            graph, node, context = job
            self._finish(graph, node["node_id"], self._executors.execute(node, context))

    def _open_slots(self) -> None:
        for i in range(self.concurrency):
            threading.Thread(
                target=self._serve_slot,
                name=f"chainwarden-exec-{self.worker_id}-{i}",
                daemon=True,  # an executor that never returns must not keep the process from exiting
            ).start()

    def _close_slots(self) -> None:
        # Each thread stops once it is idle; one still inside a stuck executor stops when (if) it returns.
        for _ in range(self.concurrency):
            self._slots.put(None)

    async def _arun(self, graph: StoredGraph, node: Node, context: Context) -> None:
        try:
            result = await self._executors.aexecute(node, context)
        except asyncio.CancelledError:
            return  # stopped after `lease_s`: the node is given back by `_shutdown`
        await asyncio.to_thread(self._finish, graph, node["node_id"], result)

    def _event_loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            loop = asyncio.new_event_loop()

            def serve() -> None:
                try:
                    loop.run_forever()
                finally:
                    loop.close()

            threading.Thread(target=serve, name=f"chainwarden-loop-{self.worker_id}", daemon=True).start()
            self._loop = loop
        return self._loop

    def _finish(self, graph: StoredGraph, node_id: str, result: ExecutionResult) -> None:
        """Applies a result (its lease renewed until then) and, in the same change, claims a node to run in
        the slot it frees. A result that cannot be applied leaves the node to run again elsewhere once its
        lease runs out."""
        key = (graph.graph_id, node_id)
        with self._mutex:
            self._applying.add(key)
        claimed: list[str] = []
        try:
            applied, (reclaimed, _, claimed) = complete(
                graph,
                node_id,
                result,
                self.worker_id,
                refill=0 if self._stop_requested else 1,
                lease_s=self.lease_s,
            )
        except Exception as exc:  # the pool goes on; the lease runs out and the node reruns
            self._count("errors")
            _log.warning(
                "worker pool %s: cannot apply the result of node %s on graph %s: %s",
                self.worker_id,
                node_id,
                graph.graph_id,
                exc,
            )
        else:
            with self._mutex:
                if applied is None:
                    self._counts["lost_leases"] = self._counts.get("lost_leases", 0) + 1
                else:
                    self._counts["executed"] = self._counts.get("executed", 0) + 1
                    self._outcomes[applied.state] = self._outcomes.get(applied.state, 0) + 1
                    self._by_graph[graph.graph_id] = self._by_graph.get(graph.graph_id, 0) + 1
                if reclaimed:
                    self._counts["reclaimed"] = self._counts.get("reclaimed", 0) + len(reclaimed)
            if claimed:
                # Started before this node leaves the in-flight set: the main loop never counts its slot free.
                self._heartbeat.hold(graph, claimed)
                for next_id in claimed:
                    self._start(graph, next_id)
        finally:
            self._heartbeat.release(graph, node_id)
            with self._mutex:
                self._applying.discard(key)
                self._inflight.pop(key, None)
            if not claimed:
                self._wake.set()  # a slot is free: the main loop looks for work on every graph

    def _lost(self, graph: Any, node_ids: list[str]) -> None:
        with self._mutex:
            lost = [n for n in node_ids if (graph.graph_id, n) not in self._applying]
        if lost:
            _log.warning(
                "worker pool %s lost its leases on graph %s (reclaimed after a pause over lease_s): %s",
                self.worker_id,
                graph.graph_id,
                lost,
            )

    # ---- waking and stopping ----

    def _listen(self, listener: Any, done: threading.Event) -> None:
        while not done.is_set():
            try:
                if listener.woken(min(self.poll_s, 1.0)):
                    self._wake.set()
            except Exception:  # the poll still finds the work; keep listening
                _log.debug("worker pool %s: listener failed", self.worker_id, exc_info=True)
                done.wait(min(self.poll_s, 1.0))

    def _shutdown(self) -> None:
        """Waits up to `lease_s` for executions in flight, then gives back the nodes still running here."""
        deadline = time.monotonic() + self.lease_s
        if self._in_flight():
            _log.info(
                "worker pool %s stopping: waiting up to %gs for %d executions",
                self.worker_id,
                self.lease_s,
                self._in_flight(),
            )
        while self._in_flight() and time.monotonic() < deadline:
            self._wake.wait_and_clear(min(0.05, max(deadline - time.monotonic(), 0.0)))
        with self._mutex:
            left = dict(self._inflight)
        by_graph: dict[str, list[str]] = {}
        for (graph_id, node_id), future in left.items():
            if future is not None and self._loop is not None:
                self._loop.call_soon_threadsafe(future.cancel)
            by_graph.setdefault(graph_id, []).append(node_id)
        for graph_id, node_ids in by_graph.items():
            try:
                released = self._graphs[graph_id].release(node_ids, worker_id=self.worker_id)
            except (StoreError, DagError) as exc:
                self._count("errors")
                _log.warning(
                    "worker pool %s: cannot give back %s on graph %s (their leases run out instead): %s",
                    self.worker_id,
                    node_ids,
                    graph_id,
                    exc,
                )
                continue
            self._count("released", len(released))
            _log.info(
                "worker pool %s gave back unfinished nodes on graph %s: %s",
                self.worker_id,
                graph_id,
                released,
            )
        self._heartbeat.stop()
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._loop = None
