"""Async wrapping: the coroutine runs in its own task so a timeout or abort can cancel it
mid-flight (decision 6), not merely refuse the next call."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from chainwarden.containment._outcomes import failed, gate, refuse, succeeded
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
) -> Decision:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    opts = _DEFAULT_OPTIONS if options is None else options
    if not isinstance(opts, WrapOptions):
        raise TypeError(f"options must be a WrapOptions or None, got {type(opts).__name__}")
    core = ctx._core
    ctx._async_used = True
    node = core.begin(
        ctx._current.get(),
        kind,
        opts.operation_name,
        (opts.model or ctx._llm_model) if kind == 0 else None,
        opts.cost_estimate_hint,
        not ctx._gated,
        False,  # the task interleaves with others on this thread: its children find it by ContextVar
    )
    if node < 0:
        return refuse(ctx, -node, opts)
    if ctx._gated:
        verdict = gate(ctx, node, kind, opts)
        if verdict is not None:
            return verdict
    loop = asyncio.get_running_loop()
    token = ctx._current.set(node)
    try:
        # The task copies the current context, so wraps inside it nest under this node.
        task: asyncio.Task[Any] = loop.create_task(_await(fn))
    finally:
        ctx._current.reset(token)
    ctx._track(task, loop)
    if core.cancel_cause:
        task.cancel()  # an abort raced with admission; the task must not run unsupervised
    limit_s, per_call = _deadline_s(ctx, opts)
    try:
        try:
            done, _ = await asyncio.wait((task,), timeout=limit_s)
        except asyncio.CancelledError:
            # Our caller was cancelled: take the call down with it, then let the cancellation go on.
            # Not the provider's failure: no retry consumed, no breaker strike.
            task.cancel()
            await asyncio.wait((task,))
            core.fail(
                node,
                opts.operation_name != "",
                opts.cost_estimate_hint,
                False,
                _ERROR_STATUS,
                "CancelledError",
            )
            raise
        if not done:
            task.cancel()
            await asyncio.wait((task,))
            if per_call:
                core.fail(
                    node,
                    opts.operation_name != "",
                    opts.cost_estimate_hint,
                    False,
                    _TIMEOUT_STATUS,
                    "",
                    "timeout",
                )
                name = core.node_name(node)
                detail = f"call {opts.operation_name or name} exceeded timeout_ms={opts.timeout_ms}"
                ctx._emit("timeout", detail, node_id=name)
                ctx._note.reason = "timeout"
                return Decision.HALT
            ctx._on_timeout()
    finally:
        ctx._untrack(task)
    if task.cancelled():
        return failed(ctx, asyncio.CancelledError(), node, opts)
    exc = task.exception()
    if exc is not None:
        return failed(ctx, exc, node, opts)
    return succeeded(ctx, node, kind, opts)


async def _await(fn: Callable[[], Awaitable[Any]]) -> Any:
    return await fn()
