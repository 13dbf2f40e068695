"""`Runner`: one graph in one process — claims ready nodes, runs the executor registered for each node type,
applies the results, and returns when the graph is idle. It shares its claim / execute / apply steps with
`WorkerPool` (`dag/execution.py`), which serves every graph of a store for as long as it runs.

A `BaseException` that is not an `Exception` (KeyboardInterrupt, SystemExit, asyncio.CancelledError) is not a
failure of the node but of the run: every node the runner holds in `running` is marked `cancelled` with
reason `interrupted` (so none stays running forever) and the exception is re-raised (docs/dag.md, "Running").
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chainwarden.dag.containment import WrapOptionsFactory
from chainwarden.dag.errors import invalid_argument
from chainwarden.dag.execution import LEASE_LOST, Applied, Context, Executor, Executors, Node, apply
from chainwarden.dag.graph import Graph
from chainwarden.dag.heartbeat import Heartbeat
from chainwarden.dag.result import ExecutionResult
from chainwarden.errors import InvalidArgumentType

_log = logging.getLogger("chainwarden.dag")

#: The reason stored on nodes cancelled because the run itself was interrupted.
INTERRUPTED = "interrupted"

__all__ = [
    "INTERRUPTED",
    "LEASE_LOST",
    "Context",
    "Executor",
    "Node",
    "RunStats",
    "Runner",
    "default_worker_id",
]

_LISTENER_METHODS = ("on_claim", "on_result", "on_run_end")


@dataclass(slots=True)
class RunStats:
    ticks: int = 0
    executed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    propagated_skips: int = 0
    repaired_leaves: int = 0

    def count(self, applied: Applied) -> None:
        self.executed += 1
        self.outcomes[applied.state] = self.outcomes.get(applied.state, 0) + 1
        self.propagated_skips += len(applied.skipped)
        self.repaired_leaves += len(applied.repaired)


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid_argument(f"{name} must be an int >= 1", argument=name)
    return value


def default_worker_id() -> str:
    """`host:pid:random`: unique per worker, and says where it runs."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Runner:
    def __init__(
        self,
        graph: Graph,
        executors: Mapping[str, Executor],
        execution_context: object | None = None,
        *,
        wrap_options: WrapOptionsFactory | None = None,
        worker_id: str | None = None,
        lease_s: float | None = None,
    ) -> None:
        if not isinstance(graph, Graph):
            raise InvalidArgumentType(
                f"graph must be a chainwarden.dag.Graph, not {type(graph).__name__}", argument="graph"
            )
        if worker_id is not None and (not isinstance(worker_id, str) or not worker_id):
            raise invalid_argument("worker_id must be a non-empty string or None", argument="worker_id")
        if lease_s is not None and (
            isinstance(lease_s, bool) or not isinstance(lease_s, (int, float)) or not 0 < lease_s < 1e9
        ):
            raise invalid_argument("lease_s must be a number of seconds > 0 or None", argument="lease_s")
        if lease_s is not None and worker_id is None:
            worker_id = default_worker_id()
        #: Leased mode (docs/dag.md "Stores and workers"): reclaim expired leases before claiming, claim
        #: with a lease, renew it while executing, and drop a result whose lease was lost.
        self.worker_id = worker_id
        self.lease_s = None if lease_s is None else float(lease_s)
        self._heartbeat = (
            None if worker_id is None or lease_s is None else Heartbeat(worker_id, float(lease_s))
        )
        self._graph = graph
        self._executors = Executors(executors, execution_context, wrap_options)
        # Replaced, never mutated: a run reads one tuple while another thread adds or removes a listener.
        self._listeners: tuple[Any, ...] = ()

    @property
    def graph(self) -> Graph:
        """The graph this runner serves."""
        return self._graph

    @property
    def execution_context(self) -> object | None:
        """The context every execution runs under (None: uncontained)."""
        return self._executors.execution_context

    # -- listeners (docs/dag.md "Listening to a runner") --------------------------------------------------

    def add_listener(self, listener: object) -> None:
        """Lets ``listener`` follow the run: ``on_claim(node, context)`` just before a claimed node is handed
        to its executor, ``on_result(node, result)`` with the ``ExecutionResult`` before it is applied, and
        ``on_run_end(stats)`` when ``run_until_idle`` / ``arun_until_idle`` return. It needs at least one of
        the three; one that raises is logged at WARNING on ``chainwarden.dag`` and the run goes on
        (docs/design.md §22). Adding the same object twice registers it once."""
        if not any(callable(getattr(listener, name, None)) for name in _LISTENER_METHODS):
            names = ", ".join(_LISTENER_METHODS)
            raise InvalidArgumentType(
                f"listener must have at least one of {names}, got {type(listener).__name__}",
                argument="listener",
            )
        if not any(existing is listener for existing in self._listeners):
            self._listeners = (*self._listeners, listener)

    def remove_listener(self, listener: object) -> None:
        """Stops calling ``listener`` (one never added is ignored)."""
        self._listeners = tuple(existing for existing in self._listeners if existing is not listener)

    def _notify(self, method: str, *args: Any) -> None:
        for listener in self._listeners:
            hook = getattr(listener, method, None)
            if hook is None:
                continue
            try:
                hook(*args)
            except Exception:
                _log.warning(
                    "runner listener %s.%s raised; the run goes on",
                    type(listener).__name__,
                    method,
                    exc_info=True,
                )

    def _observed(self, node: Node, context: Context) -> ExecutionResult:
        """`_execute` between the listeners' `on_claim` and `on_result`."""
        if not self._listeners:
            return self._execute(node, context)
        self._notify("on_claim", node, context)
        result = self._execute(node, context)
        self._notify("on_result", node, result)
        return result

    async def _aobserved(self, node: Node, context: Context) -> ExecutionResult:
        if not self._listeners:
            return await self._aexecute(node, context)
        self._notify("on_claim", node, context)
        result = await self._aexecute(node, context)
        self._notify("on_result", node, result)
        return result

    def _claim(self, limit: int, stats: RunStats) -> list[str]:
        """Skips what can no longer run, then claims up to `limit` (leased: after reclaiming expired leases,
        all in one step; docs/dag.md "Workers")."""
        if self._heartbeat is None or self.worker_id is None or self.lease_s is None:
            stats.propagated_skips += len(self._graph.propagate_failures())
            if self.worker_id is None:
                return self._graph.claim(limit)
            return self._graph.claim(limit, worker_id=self.worker_id)
        reclaimed, skipped, claimed = self._graph._claim_leased(limit, self.worker_id, self.lease_s)
        if reclaimed:
            _log.info("worker %s reclaimed expired leases: %s", self.worker_id, reclaimed)
        stats.propagated_skips += len(skipped)
        self._heartbeat.hold(self._graph, claimed)
        return claimed

    def _release_hold(self, node_id: str) -> None:
        if self._heartbeat is not None:
            self._heartbeat.release(self._graph, node_id)

    def _result(self, node_id: str, result: ExecutionResult) -> Applied | None:
        try:
            return apply(self._graph, node_id, result, self.worker_id)
        finally:
            self._release_hold(node_id)

    def close(self) -> None:
        """Stops the lease heartbeat thread (leased runners); the runner may still be used afterwards."""
        if self._heartbeat is not None:
            self._heartbeat.stop()

    def _interrupt(self, node_ids: Iterable[str], exc: BaseException) -> None:
        """Marks nodes the runner holds `cancelled` (reason `interrupted`); never masks `exc`."""
        for node_id in node_ids:
            try:
                applied = self._result(node_id, ExecutionResult.cancelled(INTERRUPTED))
                if applied is not None and applied.changed:
                    _log.info("node %s cancelled: run interrupted by %s", node_id, type(exc).__name__)
            except Exception:  # the original interruption matters more than a failed cleanup
                _log.warning("could not cancel node %s after an interruption", node_id, exc_info=True)

    def _prepare(self, node_id: str) -> tuple[Node, Context]:
        return self._executors.prepare(self._graph, node_id)

    def _execute(self, node: Node, context: Context) -> ExecutionResult:
        """One node's execution: the seam every executor call, containment refusal and missing executor
        passes through (the listeners see it from `_observed`)."""
        return self._executors.execute(node, context)

    async def _aexecute(self, node: Node, context: Context) -> ExecutionResult:
        return await self._executors.aexecute(node, context)

    async def _aexecute_marked(self, node: Node, context: Context) -> ExecutionResult:
        """`_aexecute`, marking the node as soon as an interruption escapes it (the loop may stop next)."""
        try:
            return await self._aobserved(node, context)
        except BaseException as exc:
            self._interrupt([node["node_id"]], exc)
            raise

    def _apply(self, node_id: str, result: ExecutionResult, stats: RunStats) -> None:
        applied = self._result(node_id, result)
        if applied is not None:
            stats.count(applied)

    def _tick(self, limit: int, stats: RunStats) -> list[str]:
        claimed = self._claim(limit, stats)
        for i, node_id in enumerate(claimed):
            try:
                node, context = self._prepare(node_id)
                self._apply(node_id, self._observed(node, context), stats)
            except BaseException as exc:
                # This node and the claimed ones not yet run would otherwise stay `running` forever.
                self._interrupt(claimed[i:], exc)
                raise
        if claimed:
            stats.ticks += 1
        return claimed

    def tick(self, limit: int = 10) -> list[str]:
        """Propagate, claim up to `limit`, execute each claimed node and apply its result."""
        return self._tick(limit, RunStats())

    def run_until_idle(self, *, max_ticks: int = 10_000) -> RunStats:
        stats = RunStats()
        try:
            for _ in range(_positive_int(max_ticks, "max_ticks")):
                if not self._tick(10, stats):
                    break
        finally:
            self.close()
        self._notify("on_run_end", stats)
        return stats

    async def arun_until_idle(self, *, concurrency: int = 8) -> RunStats:
        """Keeps up to `concurrency` executions in flight; async executors overlap."""
        limit = _positive_int(concurrency, "concurrency")
        stats = RunStats()
        inflight: dict[asyncio.Task[ExecutionResult], str] = {}
        try:
            while True:
                if len(inflight) < limit:
                    claimed = self._claim(limit - len(inflight), stats)
                    if claimed:
                        stats.ticks += 1
                    for i, node_id in enumerate(claimed):
                        try:
                            node, context = self._prepare(node_id)
                        except BaseException as exc:
                            self._interrupt(claimed[i:], exc)
                            raise
                        task = asyncio.create_task(self._aexecute_marked(node, context))
                        inflight[task] = node_id
                if not inflight:
                    self._notify("on_run_end", stats)
                    return stats
                done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
                for task in sorted(done, key=lambda t: inflight[t]):
                    # A cancelled or interrupted execution re-raises here; its node is already marked.
                    result = task.result()
                    self._apply(inflight.pop(task), result, stats)
        except BaseException as exc:
            self._abandon(inflight, exc, stats)
            raise
        finally:
            # Like run_until_idle: the lease keeper must not outlive the run (its stop wakes it at once).
            self.close()

    def _abandon(
        self, inflight: dict[asyncio.Task[ExecutionResult], str], exc: BaseException, stats: RunStats
    ) -> None:
        """The run is interrupted: keep results that are in, cancel the rest and mark their nodes."""
        for task, node_id in sorted(inflight.items(), key=lambda item: item[1]):
            if task.done() and not task.cancelled() and task.exception() is None:
                self._apply(node_id, task.result(), stats)
                continue
            task.cancel()
            self._interrupt([node_id], exc)
