"""Async wrapping: the call runs in its own task so a timeout or abort can cancel it mid-flight
(docs/design.md §6), not merely refuse the next call. A plain (sync) callable runs in a worker
thread (docs/design.md §21), where it can poll the chain's cancellation token."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from chainwarden._core import CallKind, CallStatus
from chainwarden.containment._outcomes import failed, gate, refuse, succeeded
from chainwarden.containment._report import CURRENT_CALL, bind
from chainwarden.containment._state import ChainState
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

__all__ = ["wrap_async"]

_DEFAULT_OPTIONS = WrapOptions()


def _deadline_s(s: ChainState, opts: WrapOptions) -> tuple[float | None, bool]:
    """Seconds this call may run, and whether the per-call limit (not the chain's) is the tighter."""
    chain_ms = s.config.timeout_ms
    chain_left = None
    if chain_ms > 0:
        chain_left = max(0.0, chain_ms / 1000.0 - s.core.counters()[5] / 1000.0)
    if opts.timeout_ms is None or opts.timeout_ms == 0:
        return chain_left, False
    call_s = opts.timeout_ms / 1000.0
    if chain_left is None or call_s < chain_left:
        return call_s, True
    return chain_left, False


async def wrap_async(
    s: ChainState,
    fn: Callable[[], Awaitable[Any]] | Callable[[], Any],
    kind: CallKind,
    options: WrapOptions | None,
) -> Decision:
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {type(fn).__name__}")
    opts = _DEFAULT_OPTIONS if options is None else options
    if not isinstance(opts, WrapOptions):
        raise TypeError(f"options must be a WrapOptions or None, got {type(opts).__name__}")
    core = s.core
    s.async_used = True
    node = core.begin(
        None,
        s.current.get(),
        kind,
        opts.operation_name,
        (opts.model or s.llm_model) if kind == CallKind.LLM else None,
        opts.cost_estimate_hint,
        not s.gated,
        False,  # the task interleaves with others on this thread: its children find it by ContextVar
    )
    if not isinstance(node, int):
        return refuse(s, node, opts)
    if s.gated:
        verdict = gate(s, node, kind, opts)
        if verdict is not None:
            return verdict
    loop = asyncio.get_running_loop()
    parent = s.current.set(node)
    bound = CURRENT_CALL.set(bind(core, node))
    try:
        # The task copies the current context, so wraps and report_cost inside it find this call.
        task: asyncio.Task[Any] = loop.create_task(_run(fn))
    finally:
        CURRENT_CALL.reset(bound)
        s.current.reset(parent)
    s.track(task, loop)
    if core.cancel_cause is not None:
        task.cancel()  # an abort raced with admission; the task must not run unsupervised
    limit_s, per_call = _deadline_s(s, opts)
    named = opts.operation_name != ""
    try:
        try:
            done, _ = await asyncio.wait((task,), timeout=limit_s)
        except asyncio.CancelledError:
            # Our caller was cancelled: take the call down with it, then let the cancellation go on.
            # Not the provider's failure: no retry consumed, no breaker strike.
            task.cancel()
            await asyncio.wait((task,))
            core.fail(node, named, opts.cost_estimate_hint, False, CallStatus.ERROR, "CancelledError")
            raise
        if not done:
            task.cancel()
            await asyncio.wait((task,))
            if per_call:
                core.fail(node, named, opts.cost_estimate_hint, False, CallStatus.TIMEOUT, "", "timeout")
                name = core.node_name(node)
                detail = f"call {opts.operation_name or name} exceeded timeout_ms={opts.timeout_ms}"
                s.emit("timeout", detail, node_id=name)
                s.note.reason = "timeout"
                return Decision.HALT
            s.on_timeout()
    finally:
        s.untrack(task)
    if task.cancelled():
        return failed(s, asyncio.CancelledError(), node, opts)
    exc = task.exception()
    if exc is not None:
        return failed(s, exc, node, opts)
    return succeeded(s, node, kind, opts, task.result())


async def _run(fn: Callable[[], Any]) -> Any:
    if inspect.iscoroutinefunction(fn):
        return await fn()
    # docs/design.md §21: a plain callable must not block the loop. If it returns an awaitable
    # (``lambda: client.complete()``), that is awaited here, on the loop.
    result = await asyncio.to_thread(fn)
    if inspect.isawaitable(result):
        return await result
    return result
