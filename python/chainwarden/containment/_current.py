"""``current_context()``: the ExecutionContext the running code belongs to, without passing it around.

Two things make a context current, and the inner one wins:

- ``with ctx:`` / ``async with ctx:`` — a ContextVar, so it follows the code into the tasks it creates and
  into ``asyncio.to_thread`` / ``contextvars.copy_context().run`` (not into a bare ``threading.Thread``,
  which starts with an empty context);
- being inside a call that ``ctx`` wraps (``wrap_llm_call`` and friends, ``@ctx.llm_call``,
  ``with ctx.llm_call()``). This reuses the bindings ``report_cost`` already finds its call by (a
  ContextVar for async wraps and blocks, the core's per-thread stack for sync wraps), so the fast path
  pays nothing for it.

``@contained`` (``_decorators``) uses it: a decorated helper is a contained call of whatever context is
current when it is called, and a plain call outside any. See docs/containment.md.
"""

from __future__ import annotations

import weakref
from contextvars import ContextVar
from threading import get_ident
from typing import TYPE_CHECKING, Final, NamedTuple

from chainwarden._core import ChainCore, open_sync_calls
from chainwarden.containment._report import CURRENT_CALL, Binding

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["current_context", "enter", "leave", "owner", "register"]


class _Entered(NamedTuple):
    ctx: ExecutionContext
    previous: _Entered | None
    # Where it was entered, to tell whether it is inside or outside the innermost wrapped call.
    thread: int
    sync_depth: int
    call: Binding | None


_ENTERED: Final[ContextVar[_Entered | None]] = ContextVar("chainwarden_context", default=None)

# The context each chain core belongs to (keyed by the core's id, checked by identity on lookup).
_BY_CORE: weakref.WeakValueDictionary[int, ExecutionContext] = weakref.WeakValueDictionary()


def register(ctx: ExecutionContext, core: ChainCore) -> None:
    _BY_CORE[id(core)] = ctx


def enter(ctx: ExecutionContext) -> None:
    _ENTERED.set(_Entered(ctx, _ENTERED.get(), get_ident(), open_sync_calls()[0], CURRENT_CALL.get()))


def leave(ctx: ExecutionContext) -> None:
    # Not a token reset: an ``async with`` may be left from a copy of the context it was entered in.
    entered = _ENTERED.get()
    if entered is not None and entered.ctx is ctx:
        _ENTERED.set(entered.previous)


def owner(core: ChainCore) -> ExecutionContext | None:
    """The context whose chain core ``core`` is, while that context lives."""
    ctx = _BY_CORE.get(id(core))
    return ctx if ctx is not None and ctx._s.core is core else None


def current_context() -> ExecutionContext | None:
    """The innermost context entered with ``with`` / ``async with`` or wrapping the running call, or None."""
    entered = _ENTERED.get()
    depth, sync = open_sync_calls()
    bound = CURRENT_CALL.get()
    # The innermost wrapped call, as report_cost finds it.
    call_core: ChainCore | None = None
    from_async = False
    if bound is not None and (sync is None or (bound.thread == get_ident() and depth <= bound.sync_depth)):
        call_core, from_async = bound.core, True
    elif sync is not None:
        call_core = sync[0]
    if call_core is None:
        return entered.ctx if entered is not None else None
    if entered is not None:
        inside = (
            entered.call is bound
            if from_async
            else entered.thread == get_ident() and entered.sync_depth >= depth
        )
        if inside:
            return entered.ctx
    return owner(call_core) or (entered.ctx if entered is not None else None)
