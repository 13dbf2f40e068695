"""Async wrapping: the coroutine runs in its own task so a timeout or abort can cancel it
mid-flight (decision 6), not merely refuse the next call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["wrap_async"]

_DEFAULT_OPTIONS = WrapOptions()
_TIMEOUT_STATUS = 4
_ERROR_STATUS = 5


def _deadline_s(ctx: ExecutionContext, opts: WrapOptions) -> tuple[float | None, bool]:
    """Seconds this call may run, and whether the per-call limit (not the chain's) is the tighter."""
    chain_ms = ctx.config.timeout_ms
    chain_left = None
    if chain_ms > 0:
        chain_left = max(0.0, chain_ms / 1000.0 - ctx._core.counters()[5] / 1000.0)
    if opts.timeout_ms is None or opts.timeout_ms == 0:
        return chain_left, False
    call_s = opts.timeout_ms / 1000.0
    if chain_left is None or call_s < chain_left:
        return call_s, True
    return chain_left, False


async def wrap_async(
    ctx: ExecutionContext,
    fn: Callable[[], Awaitable[Any]],
    kind: int,
    options: WrapOptions | None,
    report: Any,
) -> Decision:
    opts = _DEFAULT_OPTIONS if options is None else options
    core = ctx._core
    start = core.enter(opts.cost_estimate_hint)
    parent = ctx._current.get()
    name = opts.operation_name
    gated = ctx._pipeline is not None or ctx._breaker is not None
    node_id: str = ctx._graph.begin_node(
        ctx._root if parent is None else parent,
        ("llm", "tool")[kind],
        name or "unnamed",
        ctx._llm_model if kind == 0 else None,
        running=start >= 0 and not gated,
    )
    if start < 0:
        return ctx._refuse(-start, node_id, parent=parent, kind=kind, name=name, opts=opts, report=report)
    if gated:
        verdict = ctx._gate(
            node_id, parent=parent, kind=kind, name=name, opts=opts, start=start, report=report
        )
        if verdict is not None:
            return verdict
    loop = asyncio.get_running_loop()
    token = ctx._current.set(node_id)
    try:
        # The task copies the current context, so wraps inside it nest under this node.
        task: asyncio.Task[Any] = loop.create_task(_await(fn))
    finally:
        ctx._current.reset(token)
    ctx._track(task, loop)
    if core.cancel_cause:
        task.cancel()  # an abort raced with admission; the task must not run unsupervised
    where: dict[str, Any] = {
        "parent": parent,
        "kind": kind,
        "name": name,
        "opts": opts,
        "start": start,
        "report": report,
    }
    limit_s, per_call = _deadline_s(ctx, opts)
    try:
        try:
            done, _ = await asyncio.wait((task,), timeout=limit_s)
        except asyncio.CancelledError:
            # Our caller was cancelled: take the call down with it, then let the cancellation go on.
            task.cancel()
            await asyncio.wait((task,))
            # Not the provider's failure: no retry consumed, no breaker strike.
            core.leave(_ERROR_STATUS, node_id, parent, kind, name, start, 0.0)
            ctx._graph.mark_failure(node_id, error_class="CancelledError")
            raise
        if not done:
            if per_call:
                task.cancel()
                await asyncio.wait((task,))
                return _call_timed_out(ctx, node_id, **where)
            ctx._on_timeout()
            task.cancel()
            await asyncio.wait((task,))
    finally:
        ctx._untrack(task)
    if task.cancelled():
        return ctx._failed(asyncio.CancelledError(), node_id, **where)
    exc = task.exception()
    if exc is not None:
        return ctx._failed(exc, node_id, **where)
    return ctx._succeeded(node_id, **where)


async def _await(fn: Callable[[], Awaitable[Any]]) -> Any:
    return await fn()


def _call_timed_out(
    ctx: ExecutionContext,
    node_id: str,
    *,
    parent: str | None,
    kind: int,
    name: str,
    opts: WrapOptions,
    start: int,
    report: Any,
) -> Decision:
    ctx._core.leave(_TIMEOUT_STATUS, node_id, parent, kind, name, start, 0.0)
    ctx._graph.mark_halt(node_id, stop_reason="timeout")
    ctx._emit("timeout", f"call {name or node_id} exceeded timeout_ms={opts.timeout_ms}", node_id=node_id)
    if report is not None:
        report.append("timeout")
    return Decision.HALT
