"""What a `Runner` and a `WorkerPool` share: the executors they were given (checked once), running one node's
executor (under an execution context when one is given), and applying its result to the graph.

Executors run without the graph held (they may take long, and may call `graph.mutate()` themselves); each
result is then applied together with failure propagation and leaf repair in one native step (one committed
change on a stored graph).
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

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
from chainwarden.dag.vocabulary import EXECUTABLE
from chainwarden.errors import InvalidArgumentType
from chainwarden.vocab import ErrorCode

_log = logging.getLogger("chainwarden.dag")

#: The error code of a result refused because the worker's lease was reclaimed.
LEASE_LOST: Final = ErrorCode.DAG_CLAIM_LEASE_LOST

Node = dict[str, Any]
Context = list[dict[str, Any]]
Executor = Callable[[Node, Context], "ExecutionResult | Awaitable[ExecutionResult]"]


def is_async(executor: object) -> bool:
    # A coroutine function, or an object whose __call__ is one (async callable classes).
    call = getattr(executor, "__call__", None)  # noqa: B004 - we want the method, not callability
    return inspect.iscoroutinefunction(executor) or inspect.iscoroutinefunction(call)


def _checked_executors(executors: object) -> dict[str, Executor]:
    """Refuses at construction what would otherwise fail only when the first node runs."""
    if not isinstance(executors, Mapping):
        raise InvalidArgumentType(
            f"executors must be a mapping of node type to callable, not {type(executors).__name__}",
            argument="executors",
        )
    if not executors:
        raise invalid_argument(
            "executors must register at least one executor (keys: 'agent_message', 'task')",
            argument="executors",
        )
    checked_map: dict[str, Executor] = {}
    for key, executor in executors.items():
        if key not in EXECUTABLE:
            raise invalid_argument(
                f"executors key {key!r} is not a node type the runner executes "
                "(expected 'agent_message' or 'task')",
                argument="executors",
            )
        if not callable(executor):
            raise InvalidArgumentType(
                f"executors[{key!r}] must be callable, not {type(executor).__name__}", argument="executors"
            )
        checked_map[str(key)] = executor
    return checked_map


def _check_context(ctx: object | None, executors: Mapping[str, Executor]) -> None:
    if ctx is None:
        return
    needed = {"agent_message": "wrap_llm_call", "task": "wrap_tool_call"}
    for node_type in sorted(executors):
        method = needed[node_type]
        if not callable(getattr(ctx, method, None)):
            raise InvalidArgumentType(
                f"execution_context has no callable {method} (needed for {node_type} executors)",
                argument="execution_context",
            )


class Executors:
    """The executors by node type, with the execution context (and per-call wrap options) they run under."""

    __slots__ = ("_ctx", "_executors", "_wrap_options")

    def __init__(
        self,
        executors: Mapping[str, Executor],
        execution_context: object | None = None,
        wrap_options: WrapOptionsFactory | None = None,
    ) -> None:
        self._executors = _checked_executors(executors)
        _check_context(execution_context, self._executors)
        if wrap_options is not None and not callable(wrap_options):
            raise InvalidArgumentType(
                f"wrap_options must be callable or None, not {type(wrap_options).__name__}",
                argument="wrap_options",
            )
        self._ctx = execution_context
        self._wrap_options = wrap_options

    @property
    def execution_context(self) -> object | None:
        """The context every execution runs under (None: uncontained)."""
        return self._ctx

    def context_mode(self, node_type: str) -> str:
        """How much of its causal context the node type's executor asks for: `"preview"` (the default) or
        `"full"` (an executor with `context_mode = "full"`, one that builds a conversation from it)."""
        mode = getattr(self._executors.get(node_type), "context_mode", "preview")
        return mode if mode in ("preview", "full") else "preview"

    def prepare(self, graph: Graph, node_id: str) -> tuple[Node, Context]:
        """The node as its executor sees it — its record plus the id of its graph (`graph_id`) — and its
        causal context in the mode the executor asks for."""
        node = graph.node(node_id)
        node["graph_id"] = graph.graph_id
        return node, graph.context_for(node_id, mode=self.context_mode(node["node_type"]))

    def is_async(self, node_type: str) -> bool:
        executor = self._executors.get(node_type)
        return executor is not None and is_async(executor)

    def _missing(self, node: Node) -> ExecutionResult:
        return ExecutionResult.errored(f"No executor registered for node_type={node['node_type']}")

    def execute(self, node: Node, context: Context) -> ExecutionResult:
        """Runs the node's executor here; an `Exception` it raises becomes an errored result."""
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

    async def aexecute(self, node: Node, context: Context) -> ExecutionResult:
        """`execute` for an event loop: async executors are awaited, sync ones run here."""
        executor = self._executors.get(node["node_type"])
        if executor is None:
            return self._missing(node)
        if not is_async(executor):
            return self.execute(node, context)

        async def call() -> object:
            value = executor(node, context)
            return await value if inspect.isawaitable(value) else value

        if self._ctx is not None:
            return await run_contained_async(self._ctx, node, call, self._wrap_options)
        try:
            return checked(await call())
        except Exception as exc:
            return failure(exc, node)


@dataclass(frozen=True, slots=True)
class Applied:
    """A result applied: whether the node changed, the state it counts as, the nodes failure propagation
    skipped and the leaves repaired with it."""

    changed: bool
    state: str
    skipped: list[str]
    repaired: list[str]


Claims = tuple[list[str], list[str], list[str]]
_NO_CLAIMS: Claims = ([], [], [])


def apply(graph: Graph, node_id: str, result: ExecutionResult, worker_id: str | None) -> Applied | None:
    """Applies `result` to `node_id` (refused, and None returned, when `worker_id` lost its lease: another
    worker's result counts). A result the engine cannot take (say non-JSON output) errors the node instead,
    so it never stays `running`."""

    def send(outcome: str, payload: dict[str, Any]) -> tuple[tuple[bool, list[str], list[str]], Claims]:
        if worker_id is None:
            return graph.apply_result(node_id, outcome, **payload), _NO_CLAIMS
        return graph.apply_result(node_id, outcome, worker_id=worker_id, **payload), _NO_CLAIMS

    return _apply(node_id, result, worker_id, send)[0]


def complete(
    graph: Graph, node_id: str, result: ExecutionResult, worker_id: str, *, refill: int, lease_s: float
) -> tuple[Applied | None, Claims]:
    """`apply`, then claim up to `refill` more nodes with a lease in the same step (one committed change on a
    stored graph): a pooled worker refills the slot it frees. Returns what was applied and the claim's
    (reclaimed, skipped, claimed); nothing is claimed when the lease was lost."""

    def send(outcome: str, payload: dict[str, Any]) -> tuple[tuple[bool, list[str], list[str]], Claims]:
        return graph._complete(node_id, outcome, payload, worker_id, refill=refill, lease_s=lease_s)

    return _apply(node_id, result, worker_id, send)


def _apply(
    node_id: str,
    result: ExecutionResult,
    worker_id: str | None,
    send: Callable[[str, dict[str, Any]], tuple[tuple[bool, list[str], list[str]], Claims]],
) -> tuple[Applied | None, Claims]:
    payload: dict[str, Any] = {
        "message": result.message,
        "content": result.content,
        "output": result.output,
        "metadata": result.metadata,
    }
    try:
        (changed, skipped, repaired), claims = send(result.outcome, payload)
    except DagError as err:
        if err.code == LEASE_LOST:
            _log.warning("worker %s lost the lease on node %s; its result is dropped", worker_id, node_id)
            return None, _NO_CLAIMS
        result = ExecutionResult.errored(f"invalid_execution_result: {err}")
        (changed, skipped, repaired), claims = send("errored", {"message": result.message})
    state = "errored" if result.outcome == "skipped" else result.outcome
    return Applied(changed, state, skipped, repaired), claims
