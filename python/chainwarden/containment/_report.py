"""``report_cost``: a wrapped call tells its chain what it actually cost (docs/design.md §20).

Two bindings say which call is running. Async wraps and ``with`` blocks bind their call to a
ContextVar (the core's ``CURRENT_CALL`` of ``CallBinding``s and blocks bound as themselves), which
follows it into the tasks and ``asyncio.to_thread`` workers it starts (both copy the current
context). Sync wraps run their callable on the caller's thread, so the core keeps them on a
per-thread stack instead: a ContextVar set and reset per call would double the cost of the fast
path. The innermost of the two wins (the core's ``current_call()``, the one reader of both); the
core adds the report to that open call and settles it at the call's end.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from decimal import Decimal
from typing import Final

from chainwarden._args import MAX_INT64
from chainwarden._core import CURRENT_CALL as _CURRENT_CALL
from chainwarden._core import Block, CallBinding, OpenCall, bind_call, enclosing_call
from chainwarden._core import current_call as _current_call
from chainwarden.errors import InvalidArgument, InvalidArgumentType, InvalidState

__all__ = [
    "CURRENT_CALL",
    "Binding",
    "bind_call",
    "current_call",
    "enclosing",
    "flag_current_call",
    "report_cost",
]

# An async call or block, as seen from the code it runs (core, node, thread, sync_depth, outer).
Binding = CallBinding


# The one context variable of open async calls and blocks, of every chain: each chain finds its own
# innermost call by walking `outer` (`enclosing`), so a call sets and resets one variable, not two
# (a set and a reset copy the context: about 0.4 µs a call, benches/README.md). `bind_call` sets it.
CURRENT_CALL: Final[ContextVar[CallBinding | Block | None]] = _CURRENT_CALL

# The node of `core`'s innermost open async call or block in this context, if any. A call of another
# chain in between is skipped: a wrap nested in another context's wrap must not adopt that context's node.
enclosing: Final = enclosing_call


def _number(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        raise InvalidArgumentType(f"{name} must be a number, got {type(value).__name__}", argument=name)
    try:
        return float(value)
    except (OverflowError, ValueError):
        raise InvalidArgument(f"{name} must be a finite number >= 0; got {value!r}", argument=name) from None


def _tokens(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{name} must be an int or None, got {type(value).__name__}", argument=name)
    # The core decides the rule (>= 0, docs/design.md §28); only a count the binding's 64-bit argument
    # cannot carry is refused here, in the core's words, before the conversion would fail untyped.
    if value > MAX_INT64:
        raise InvalidArgument(f"{name} must be >= 0 and < 2**63; got {value}", argument=name)
    return value


# The innermost wrapped call this code runs in, of any chain (an `OpenCall`: core, node); None outside any.
# Native: the innermost of the two bindings, the rule `current_context()` follows too.
current_call: Final[Callable[[], OpenCall | None]] = _current_call


def report_cost(
    cost_usd: float | Decimal, *, tokens_in: int | None = None, tokens_out: int | None = None
) -> None:
    """Charges the wrapped call this runs inside with its actual cost (and token counts).

    Called more than once in one call, the reports add up. The call is then settled at this
    cost instead of its ``cost_estimate_hint``; a call that fails after reporting is still charged
    what it reported (docs/design.md §30).
    Raises ``RuntimeError`` outside a wrapped call (or after it ended), ``ValueError`` naming the
    argument for a NaN, infinite or negative value or a total that would overflow, ``TypeError``
    for a value that is not a number. Nothing is recorded when it raises.
    """
    cost = _number(cost_usd, "cost_usd")
    tin = _tokens(tokens_in, "tokens_in")
    tout = _tokens(tokens_out, "tokens_out")
    call = _current("report_cost")
    try:
        call.core.report(call.node, cost, tin, tout)
    except KeyError:
        raise InvalidState("report_cost() was called after its wrapped call had ended") from None


def flag_current_call(key: str) -> None:
    """Sets ``metadata[key] = True`` on the node of the wrapped call this runs inside (what an
    integration learns of a call only when it ends, e.g. ``usage_missing``, docs/design.md §30)."""
    call = _current("flag_current_call")
    try:
        call.core.flag(call.node, key)
    except KeyError:
        raise InvalidState("flag_current_call() was called after its wrapped call had ended") from None


def _current(who: str) -> OpenCall:
    """The innermost open call of this thread or task, as ``report_cost`` charges it."""
    found = current_call()
    if found is None:
        raise InvalidState(
            f"{who}() must be called inside a call wrapped by an ExecutionContext "
            "(wrap_llm_call, wrap_tool_call, their async forms, @ctx.llm_call or with ctx.llm_call())"
        )
    return found
