"""`Runner`: claims ready nodes, runs the executor registered for each node type, applies the results.

Executors run without the graph held (they may take long, and may call `graph.mutate()` themselves); each
result is then applied together with failure propagation and leaf repair in one native step.

A `BaseException` that is not an `Exception` (KeyboardInterrupt, SystemExit, asyncio.CancelledError) is not a
failure of the node but of the run: every node the runner holds in `running` is marked `cancelled` with
reason `interrupted` (so none stays running forever) and the exception is re-raised (docs/dag.md, "Running").
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chainwarden._core import DagError
from chainwarden.dag.containment import (
    WrapOptionsFactory,
    checked,
    failure,
    run_contained,
    run_contained_async,
)
from chainwarden.dag.errors import invalid_argument
from chainwarden.dag.graph import Graph
from chainwarden.dag.heartbeat import Heartbeat
from chainwarden.dag.result import ExecutionResult
from chainwarden.dag.vocabulary import EXECUTABLE

_log = logging.getLogger("chainwarden.dag")

#: The reason stored on nodes cancelled because the run itself was interrupted.
INTERRUPTED = "interrupted"
#: The error code of a result refused because the worker's lease was reclaimed.
LEASE_LOST = "dag.claim.lease_lost"

_LISTENER_METHODS = ("on_claim", "on_result", "on_run_end")

Node = dict[str, Any]
Context = list[dict[str, Any]]
Executor = Callable[[Node, Context], "ExecutionResult | Awaitable[ExecutionResult]"]


@dataclass(slots=True)
class RunStats:
    ticks: int = 0
    executed: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    propagated_skips: int = 0
    repaired_leaves: int = 0


def _is_async(executor: object) -> bool:
    # A coroutine function, or an object whose __call__ is one (async callable classes).
    call = getattr(executor, "__call__", None)  # noqa: B004 - we want the method, not callability
    return inspect.iscoroutinefunction(executor) or inspect.iscoroutinefunction(call)


def _positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise invalid_argument(f"{name} must be an int >= 1")
    return value


def _checked_executors(executors: object) -> dict[str, Executor]:
    """Refuses at construction what would otherwise fail only when the first node runs."""
    if not isinstance(executors, Mapping):
        raise TypeError(
            f"executors must be a mapping of node type to callable, not {type(executors).__name__}"
        )
    if not executors:
        raise invalid_argument(
            "executors must register at least one executor (keys: 'agent_message', 'task')"
        )
    checked_map: dict[str, Executor] = {}
    for key, executor in executors.items():
        if key not in EXECUTABLE:
            raise invalid_argument(
                f"executors key {key!r} is not a node type the runner executes "
                "(expected 'agent_message' or 'task')"
            )
        if not callable(executor):
            raise TypeError(f"executors[{key!r}] must be callable, not {type(executor).__name__}")
        checked_map[str(key)] = executor
    return checked_map


def _check_context(ctx: object | None, executors: Mapping[str, Executor]) -> None:
    if ctx is None:
        return
    needed = {"agent_message": "wrap_llm_call", "task": "wrap_tool_call"}
    for node_type in sorted(executors):
        method = needed[node_type]
        if not callable(getattr(ctx, method, None)):
            raise TypeError(f"execution_context has no callable {method} (needed for {node_type} executors)")


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
            raise TypeError(f"graph must be a chainwarden.dag.Graph, not {type(graph).__name__}")
        if worker_id is not None and (not isinstance(worker_id, str) or not worker_id):
            raise invalid_argument("worker_id must be a non-empty string or None")
        if lease_s is not None and (
            isinstance(lease_s, bool) or not isinstance(lease_s, (int, float)) or not 0 < lease_s < 1e9
        ):
            raise invalid_argument("lease_s must be a number of seconds > 0 or None")
        if lease_s is not None and worker_id is None:
            worker_id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        #: Leased mode (docs/dag.md "Stores and workers"): reclaim expired leases before claiming, claim
        #: with a lease, renew it while executing, and drop a result whose lease was lost.
        self.worker_id = worker_id
        self.lease_s = None if lease_s is None else float(lease_s)
        self._heartbeat = (
            None if worker_id is None or lease_s is None else Heartbeat(graph, worker_id, float(lease_s))
        )
        self._graph = graph
        self._executors = _checked_executors(executors)
        _check_context(execution_context, self._executors)
        if wrap_options is not None and not callable(wrap_options):
            raise TypeError(f"wrap_options must be callable or None, not {type(wrap_options).__name__}")
        self._ctx = execution_context
        self._wrap_options = wrap_options
        # Replaced, never mutated: a run reads one tuple while another thread adds or removes a listener.
        self._listeners: tuple[Any, ...] = ()

    # -- listeners (docs/dag.md "Listening to a runner") --------------------------------------------------

    def add_listener(self, listener: object) -> None:
        """Lets ``listener`` follow the run: ``on_claim(node, context)`` just before a claimed node is handed
        to its executor, ``on_result(node, result)`` with the ``ExecutionResult`` before it is applied, and
        ``on_run_end(stats)`` when ``run_until_idle`` / ``arun_until_idle`` return. It needs at least one of
        the three; one that raises is logged at WARNING on ``chainwarden.dag`` and the run goes on
        (docs/design.md §22). Adding the same object twice registers it once."""
        if not any(callable(getattr(listener, name, None)) for name in _LISTENER_METHODS):
            names = ", ".join(_LISTENER_METHODS)
            raise TypeError(f"listener must have at least one of {names}, got {type(listener).__name__}")
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

    def _claim(self, limit: int) -> list[str]:
        if self._heartbeat is not None:
            reclaimed = self._graph.reclaim_expired()
            if reclaimed:
                _log.info("worker %s reclaimed expired leases: %s", self.worker_id, reclaimed)
        if self.worker_id is None:
            claimed = self._graph.claim(limit)
        else:
            claimed = self._graph.claim(limit, worker_id=self.worker_id, lease_s=self.lease_s)
        if self._heartbeat is not None:
            self._heartbeat.hold(claimed)
        return claimed

    def _result(
        self, node_id: str, outcome: str, message: object = None, **payload: Any
    ) -> tuple[bool, list[str], list[str]]:
        try:
            if self.worker_id is None:
                return self._graph.apply_result(node_id, outcome, message=message, **payload)
            return self._graph.apply_result(
                node_id, outcome, message=message, worker_id=self.worker_id, **payload
            )
        finally:
            if self._heartbeat is not None:
                self._heartbeat.release(node_id)

    def close(self) -> None:
        """Stops the lease heartbeat thread (leased runners); the runner may still be used afterwards."""
        if self._heartbeat is not None:
            self._heartbeat.stop()

    def _interrupt(self, node_ids: Iterable[str], exc: BaseException) -> None:
        """Marks nodes the runner holds `cancelled` (reason `interrupted`); never masks `exc`."""
        for node_id in node_ids:
            try:
                if self._result(node_id, "cancelled", message=INTERRUPTED)[0]:
                    _log.info("node %s cancelled: run interrupted by %s", node_id, type(exc).__name__)
            except Exception:  # the original interruption matters more than a failed cleanup
                _log.warning("could not cancel node %s after an interruption", node_id, exc_info=True)

    def _prepare(self, node_id: str) -> tuple[Node, Context]:
        return self._graph.node(node_id), self._graph.context_for(node_id)

    def _missing(self, node: Node) -> ExecutionResult:
        return ExecutionResult.errored(f"No executor registered for node_type={node['node_type']}")

    def _execute(self, node: Node, context: Context) -> ExecutionResult:
        executor = self._executors.get(node["node_type"])
        if executor is None:
            return self._missing(node)

        def call() -> object:
            value = executor(node, context)
            if inspect.isawaitable(value):
                # A coroutine cannot run here; close it so it does not warn, and report the misuse.
                close = getattr(value, "close", None)
                if callable(close):
                    close()
                return ExecutionResult.errored("async executor used with the synchronous runner")
            return value

        if self._ctx is not None:
            return run_contained(self._ctx, node, call, self._wrap_options)
        try:
            return checked(call())
        except Exception as exc:
            return failure(exc, node)

    async def _aexecute(self, node: Node, context: Context) -> ExecutionResult:
        executor = self._executors.get(node["node_type"])
        if executor is None:
            return self._missing(node)
        if not _is_async(executor):
            return self._execute(node, context)

        async def call() -> object:
            value = executor(node, context)
            return await value if inspect.isawaitable(value) else value

        if self._ctx is not None:
            return await run_contained_async(self._ctx, node, call, self._wrap_options)
        try:
            return checked(await call())
        except Exception as exc:
            return failure(exc, node)

    async def _aexecute_marked(self, node: Node, context: Context) -> ExecutionResult:
        """`_aexecute`, marking the node as soon as an interruption escapes it (the loop may stop next)."""
        try:
            return await self._aobserved(node, context)
        except BaseException as exc:
            self._interrupt([node["node_id"]], exc)
            raise

    def _apply(self, node_id: str, result: ExecutionResult, stats: RunStats) -> None:
        try:
            _, skipped, repaired = self._result(
                node_id,
                result.outcome,
                message=result.message,
                content=result.content,
                output=result.output,
                metadata=result.metadata,
            )
        except DagError as err:
            if err.code == LEASE_LOST:
                # Our lease ran out and the node went back to the queue: another worker's result counts.
                _log.warning(
                    "worker %s lost the lease on node %s; its result is dropped", self.worker_id, node_id
                )
                return
            # The result itself was unusable (e.g. non-JSON output): the node must still leave `running`.
            result = ExecutionResult.errored(f"invalid_execution_result: {err}")
            _, skipped, repaired = self._result(node_id, "errored", message=result.message)
        state = "errored" if result.outcome == "skipped" else result.outcome
        stats.executed += 1
        stats.outcomes[state] = stats.outcomes.get(state, 0) + 1
        stats.propagated_skips += len(skipped)
        stats.repaired_leaves += len(repaired)

    def _tick(self, limit: int, stats: RunStats) -> list[str]:
        stats.propagated_skips += len(self._graph.propagate_failures())
        claimed = self._claim(limit)
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
                    stats.propagated_skips += len(self._graph.propagate_failures())
                    claimed = self._claim(limit - len(inflight))
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
