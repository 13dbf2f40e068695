"""Async wrapping: the call's coroutine is awaited in the caller's own task, and a timeout or abort
cancels that task while it waits inside the call (docs/design.md §6), not merely refusing the next
call. A plain (sync) callable runs in a worker thread (docs/design.md §21), where it can poll the
chain's cancellation token.

Awaiting in place instead of in a task of its own saves ``create_task`` + ``asyncio.wait`` (about
11 µs a call). The price is that our cancellation lands in the caller's task, so ``_InFlight``
remembers that it cancelled, and the CancelledError it caused is turned back into the call's
outcome with ``Task.uncancel()``; a cancellation from anyone else (the caller's own timeout, a
``task.cancel()``) is passed on unchanged.
"""

from __future__ import annotations

import asyncio
import inspect
import sys
from asyncio import get_running_loop
from collections.abc import Awaitable, Callable
from inspect import CO_COROUTINE
from types import FunctionType
from typing import Any, Final

from chainwarden._core import CallKind, CallNotAdmitted
from chainwarden.containment._outcomes import capture_call, failed, gate, refuse, spent, succeeded
from chainwarden.containment._report import CURRENT_CALL, bind_call, enclosing
from chainwarden.containment._rich import bind as bind_options
from chainwarden.containment._state import ChainState
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgumentType, InvalidState
from chainwarden.shield.types import Decision
from chainwarden.vocab import CallStatus

__all__ = ["wrap_async"]

# The running task, read the cheapest way: from 3.12 `asyncio.current_task` is C; on 3.11 it is Python code
# reading this dict (loop -> task), which is read directly here (about 0.35 µs a call, benches/README.md).
_CURRENT_TASKS: Final[dict[asyncio.AbstractEventLoop, asyncio.Task[Any]] | None] = (
    getattr(asyncio.tasks, "_current_tasks", None) if sys.version_info < (3, 12) else None
)
_current_task: Final = asyncio.current_task

_DEFAULT_OPTIONS: Final = WrapOptions()
_ALLOW: Final = Decision.ALLOW
# Why _InFlight cancelled the task.
_ABORT: Final = 1  # cancel_all: abort, chain timeout seen by the core, a child's spending, close
_CALL_LIMIT: Final = 2  # options.timeout_ms ran out first
_CHAIN_LIMIT: Final = 3  # the chain's timeout_ms ran out while this call waited


class _InFlight:
    """One running async call as ``ChainState.cancel_all`` sees it: something to cancel on its loop.

    Both ``cancel`` and ``expire`` run on the call's loop thread (``call_soon_threadsafe`` /
    ``call_later``), so they never race with the call finishing: once ``active`` is False they do
    nothing, and the caller's later awaits are never hit by a stale cancellation.
    """

    __slots__ = ("active", "cause", "task")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.active = True
        self.cause = 0

    def cancel(self) -> None:
        self._fire(_ABORT)

    def expire(self, cause: int) -> None:
        self._fire(cause)

    def _fire(self, cause: int) -> None:
        if self.active and not self.cause:
            self.cause = cause
            self.task.cancel()


def _deadline_s(s: ChainState, opts: WrapOptions) -> tuple[float | None, bool]:
    """Seconds this call may run, and whether the per-call limit (not the chain's) is the tighter."""
    chain_ms = s.config.timeout_ms
    chain_left = None
    if chain_ms > 0:
        chain_left = max(0.0, chain_ms / 1000.0 - s.core.counters().elapsed_ms / 1000.0)
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
        raise InvalidArgumentType(f"fn must be callable, got {type(fn).__name__}", argument="fn")
    opts = _DEFAULT_OPTIONS if options is None else options
    if not isinstance(opts, WrapOptions):
        raise InvalidArgumentType(
            f"options must be a WrapOptions or None, got {type(opts).__name__}", argument="options"
        )
    loop = get_running_loop()
    task = _CURRENT_TASKS.get(loop) if _CURRENT_TASKS is not None else _current_task(loop)
    if task is None:
        # Driven by hand outside any task: there would be nothing to cancel on a timeout or abort.
        raise InvalidState("an async wrap must be awaited inside an asyncio task")
    core = s.core
    s.async_used = True
    try:
        # Not on this thread's stack: the task interleaves with others here; its children find it by
        # ContextVar.
        node = core.begin(
            enclosing(core),
            kind,
            opts.operation_name,
            (opts.model or s.llm_model) if kind == CallKind.LLM else None,
            opts.cost_estimate_hint,
        )
    except CallNotAdmitted as refused:
        return refuse(s, refused, opts)
    if s.gated:
        verdict = gate(s, node, kind, opts)
        if verdict is not None:
            return verdict
    if core.cancel_cause is not None:
        # An abort raced with admission: the call must not start unsupervised.
        return failed(s, asyncio.CancelledError(), node, opts)
    rich = opts._rich
    if rich:
        bind_options(s, node, opts)
    call = _InFlight(task)
    tasks = s.tasks
    tasks[call] = loop  # ChainState.track, inlined: this runs on every async call
    timer = None
    if s.config.timeout_ms > 0 or opts.timeout_ms:
        limit_s, per_call = _deadline_s(s, opts)
        if limit_s is not None:
            timer = loop.call_later(limit_s, call.expire, _CALL_LIMIT if per_call else _CHAIN_LIMIT)
    # Wraps and report_cost inside the call find it through this context variable.
    bound = bind_call(core, node)
    error: BaseException | None = None
    result: Any = None
    try:
        # The common case (an ``async def`` function) read straight off its code flags, inlined.
        if (type(fn) is FunctionType and fn.__code__.co_flags & CO_COROUTINE) or _is_coroutine_function(fn):
            result = await fn()
        else:
            result = await _in_thread(fn)
    except BaseException as exc:
        error = exc
    finally:
        call.active = False
        if timer is not None:
            timer.cancel()
        tasks.pop(call, None)
        CURRENT_CALL.reset(bound)
    cause = call.cause
    if cause:
        # Our cancellation: take it back, so the caller's task is not left "cancelling". A
        # cancellation of the caller that arrived as well is still counted and goes on below.
        task.uncancel()
    if isinstance(error, asyncio.CancelledError) and (not cause or task.cancelling()):
        # Our caller was cancelled: the call went down with it, and the cancellation goes on.
        # Not the provider's failure: no retry consumed, no breaker strike.
        spent(
            s,
            core.fail(
                node,
                opts.operation_name != "",
                opts.cost_estimate_hint,
                False,
                CallStatus.ERROR,
                "CancelledError",
            ),
        )
        raise error
    if cause == _CALL_LIMIT:
        spent(
            s,
            core.fail(
                node,
                opts.operation_name != "",
                opts.cost_estimate_hint,
                False,
                CallStatus.TIMEOUT,
                "",
                "timeout",
            ),
        )
        name = core.node_name(node)
        s.emit(
            "timeout",
            f"call {opts.operation_name or name} exceeded timeout_ms={opts.timeout_ms}",
            node_id=name,
        )
        s.note.reason = "timeout"
        return Decision.HALT
    if cause == _CHAIN_LIMIT:
        s.on_timeout()
        return failed(s, error if error is not None else asyncio.CancelledError(), node, opts)
    if s.capture is not None:
        capture_call(s, node, fn, result, has_output=error is None)
    if error is not None:
        return failed(s, error, node, opts)
    if s.plain and not rich:
        # Nothing to consult or notify: one native call settles it, as on the sync fast path.
        core.settle(node, opts.operation_name != "", opts.cost_estimate_hint)
        return _ALLOW
    return succeeded(s, node, kind, opts, result)


def _is_coroutine_function(fn: object) -> bool:
    # Anything but a plain ``async def`` function (methods, partials, marked callables) goes through inspect.
    return inspect.iscoroutinefunction(fn)


async def _in_thread(fn: Callable[[], Any]) -> Any:
    # docs/design.md §21: a plain callable must not block the loop. If it returns an awaitable
    # (``lambda: client.complete()``), that is awaited here, on the loop.
    result = await asyncio.to_thread(fn)
    if inspect.isawaitable(result):
        return await result
    return result
