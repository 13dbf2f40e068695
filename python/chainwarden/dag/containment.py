"""Running one executor call under an execution context (duck-typed `wrap_llm_call` / `wrap_tool_call`).

The context decides whether the call may happen at all and records it; this module only translates its
verdict into an `ExecutionResult`. agent_message nodes are LLM calls, task nodes are tool calls.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from chainwarden._contexts import decision_name
from chainwarden.dag.result import ExecutionResult

_log = logging.getLogger("chainwarden.dag")

WrapOptionsFactory = Callable[[dict[str, Any]], Any]


def failure(exc: BaseException, node: dict[str, Any] | None = None) -> ExecutionResult:
    """Stored as `"<Class>: <message>"`; the traceback goes to the DEBUG log (docs/design.md §22)."""
    node_id = node.get("node_id") if node is not None else None
    _log.debug("executor for node %s raised %s", node_id, type(exc).__name__, exc_info=exc)
    return ExecutionResult.errored(f"{type(exc).__name__}: {exc}")


def checked(value: object) -> ExecutionResult:
    if isinstance(value, ExecutionResult):
        return value
    return ExecutionResult.errored(f"invalid_execution_result_type={type(value).__name__}")


def stop_reason(ctx: object) -> str:
    """Best effort across context implementations: the halted call's recorded reason, else the last event."""
    graph_snapshot = getattr(ctx, "get_graph_snapshot", None)
    if callable(graph_snapshot):
        nodes = graph_snapshot().get("nodes") or []
        records = list(nodes.values()) if isinstance(nodes, dict) else list(nodes)
        for record in reversed(records):
            reason = record.get("stop_reason") if isinstance(record, dict) else None
            if reason:
                return str(reason)
    snapshot = getattr(ctx, "get_snapshot", None)
    if callable(snapshot):
        snap = snapshot()
        reason = getattr(snap, "abort_reason", None)
        if reason:
            return str(reason)
        events = getattr(snap, "events", ()) or ()
        if events:
            return str(getattr(events[-1], "event_type", "halt")).lower()
    return "halt"


def _wrapper(ctx: object, node_type: str, suffix: str = "") -> Callable[..., Any]:
    kind = "llm" if node_type == "agent_message" else "tool"
    wrap: Callable[..., Any] = getattr(ctx, f"wrap_{kind}_call{suffix}")
    return wrap


def _verdict(ctx: object, decision: object, box: list[ExecutionResult]) -> ExecutionResult:
    name = decision_name(decision)
    if name == "HALT":
        return ExecutionResult.errored(f"halted:{stop_reason(ctx)}")
    if box:
        return box[0]
    return ExecutionResult.errored(f"not_executed:{name.lower()}")


def run_contained(
    ctx: object,
    node: dict[str, Any],
    call: Callable[[], object],
    options: WrapOptionsFactory | None,
) -> ExecutionResult:
    box: list[ExecutionResult] = []

    def fn() -> None:
        try:
            box.append(checked(call()))
        except Exception as exc:
            box.append(failure(exc, node))
            raise  # the context must see the failure to count it

    wrap = _wrapper(ctx, node["node_type"])
    try:
        decision = wrap(fn) if options is None else wrap(fn, options=options(node))
    except Exception as exc:
        return box[0] if box else failure(exc, node)
    return _verdict(ctx, decision, box)


async def run_contained_async(
    ctx: object,
    node: dict[str, Any],
    call: Callable[[], Awaitable[object]],
    options: WrapOptionsFactory | None,
) -> ExecutionResult:
    box: list[ExecutionResult] = []

    async def fn() -> None:
        try:
            box.append(checked(await call()))
        except Exception as exc:
            box.append(failure(exc, node))
            raise

    try:
        wrap = _wrapper(ctx, node["node_type"], "_async")
    except AttributeError:
        return ExecutionResult.errored("execution_context cannot wrap coroutines (no wrap_*_call_async)")
    try:
        decision = await (wrap(fn) if options is None else wrap(fn, options=options(node)))
    except Exception as exc:
        return box[0] if box else failure(exc, node)
    return _verdict(ctx, decision, box)
