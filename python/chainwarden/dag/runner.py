"""`Runner`: claims ready nodes, runs the executor registered for each node type, applies the results.

Executors run without the graph held (they may take long, and may call `graph.mutate()` themselves); each
result is then applied together with failure propagation and leaf repair in one native step.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
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
from chainwarden.dag.result import ExecutionResult

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


class Runner:
    def __init__(
        self,
        graph: Graph,
        executors: Mapping[str, Executor],
        execution_context: object | None = None,
        *,
        wrap_options: WrapOptionsFactory | None = None,
    ) -> None:
        self._graph = graph
        self._executors = dict(executors)
        self._ctx = execution_context
        self._wrap_options = wrap_options

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
            return failure(exc)

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
            return failure(exc)

    def _apply(self, node_id: str, result: ExecutionResult, stats: RunStats) -> None:
        try:
            _, skipped, repaired = self._graph.apply_result(
                node_id,
                result.outcome,
                message=result.message,
                content=result.content,
                output=result.output,
                metadata=result.metadata,
            )
        except DagError as err:
            # The result itself was unusable (e.g. non-JSON output): the node must still leave `running`.
            result = ExecutionResult.errored(f"invalid_execution_result: {err}")
            _, skipped, repaired = self._graph.apply_result(node_id, "errored", message=result.message)
        state = "errored" if result.outcome == "skipped" else result.outcome
        stats.executed += 1
        stats.outcomes[state] = stats.outcomes.get(state, 0) + 1
        stats.propagated_skips += len(skipped)
        stats.repaired_leaves += len(repaired)

    def _tick(self, limit: int, stats: RunStats) -> list[str]:
        stats.propagated_skips += len(self._graph.propagate_failures())
        claimed = self._graph.claim(limit)
        for node_id in claimed:
            node, context = self._prepare(node_id)
            self._apply(node_id, self._execute(node, context), stats)
        if claimed:
            stats.ticks += 1
        return claimed

    def tick(self, limit: int = 10) -> list[str]:
        """Propagate, claim up to `limit`, execute each claimed node and apply its result."""
        return self._tick(limit, RunStats())

    def run_until_idle(self, *, max_ticks: int = 10_000) -> RunStats:
        stats = RunStats()
        for _ in range(_positive_int(max_ticks, "max_ticks")):
            if not self._tick(10, stats):
                break
        return stats

    async def arun_until_idle(self, *, concurrency: int = 8) -> RunStats:
        """Keeps up to `concurrency` executions in flight; async executors overlap."""
        limit = _positive_int(concurrency, "concurrency")
        stats = RunStats()
        inflight: dict[asyncio.Task[ExecutionResult], str] = {}
        while True:
            if len(inflight) < limit:
                stats.propagated_skips += len(self._graph.propagate_failures())
                claimed = self._graph.claim(limit - len(inflight))
                if claimed:
                    stats.ticks += 1
                for node_id in claimed:
                    node, context = self._prepare(node_id)
                    inflight[asyncio.create_task(self._aexecute(node, context))] = node_id
            if not inflight:
                return stats
            done, _ = await asyncio.wait(inflight, return_when=asyncio.FIRST_COMPLETED)
            for task in sorted(done, key=lambda t: inflight[t]):
                self._apply(inflight.pop(task), task.result(), stats)
