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
from collections.abc import Callable
from typing import TYPE_CHECKING, Final

from chainwarden._core import ChainCore, enter_context, leave_context
from chainwarden._core import current_context as _current_context

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["current_context", "enter", "leave", "owner", "register"]

# The context each chain core belongs to (keyed by the core's id, checked by identity on lookup).
_BY_CORE: weakref.WeakValueDictionary[int, ExecutionContext] = weakref.WeakValueDictionary()


def register(ctx: ExecutionContext, core: ChainCore) -> None:
    _BY_CORE[id(core)] = ctx


# ``with ctx:`` / ``async with ctx:`` (native: a ContextVar of ``EnteredContext``s). Leaving is not a token
# reset: an ``async with`` may be left from a copy of the context it was entered in.
enter: Final = enter_context
leave: Final = leave_context


def owner(core: ChainCore) -> ExecutionContext | None:
    """The context whose chain core ``core`` is, while that context lives."""
    ctx = _BY_CORE.get(id(core))
    return ctx if ctx is not None and ctx._s.core is core else None


# The innermost context entered with ``with`` / ``async with`` or wrapping the running call, or None. Native:
# ``@contained`` asks it on every call; of a call whose context is not the one entered, ``owner`` answers.
current_context: Final[Callable[[], ExecutionContext | None]] = _current_context
