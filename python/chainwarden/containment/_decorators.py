"""``@ctx.llm_call(...)`` / ``@ctx.tool_call(...)``: contained calls that behave like plain calls.

A decorated function returns its own result. When containment refuses the call it raises
``CallRefused`` (carrying the decision and stop reason); when the function itself fails, its
exception propagates after the failure has been counted. The same object used as ``with``
contains a block instead of a function (``chainwarden._core.Block``, see ``_blocks``).

On a chain with nothing to consult besides its core (``ChainState.plain``) a decorated function runs
the wrap's fast path inline: one native call to admit, the function, one to settle.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final, Literal, ParamSpec, TypeVar, cast, overload

from chainwarden._core import Block, CallKind, CallNotAdmitted
from chainwarden.containment._async import wrap_async
from chainwarden.containment._blocks import CallRefused, plan, plan_named
from chainwarden.containment._capture import INPUT_ATTR, CallInput
from chainwarden.containment._current import current_context
from chainwarden.containment._outcomes import failed, not_sync, refuse
from chainwarden.containment._report import enclosing
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgument, InvalidArgumentType
from chainwarden.shield.types import Decision
from chainwarden.vocab import NodeKind

if TYPE_CHECKING:
    from chainwarden.containment._state import ChainState
    from chainwarden.containment.context import ExecutionContext

__all__ = [
    "CallRefused",
    "Contained",
    "contained",
    "contained_call",
    "decorate",
    "llm_call",
    "tool_call",
]

_log = logging.getLogger("chainwarden.containment")

P = ParamSpec("P")
R = TypeVar("R")


def _outcome(ctx: ExecutionContext, decision: Decision, box: list[Any], errors: list[BaseException]) -> Any:
    if decision is Decision.ALLOW:
        return box[0]
    if errors and decision is Decision.RETRY:
        raise errors[0]
    # Read at once: nothing else ran on this thread since the wrap recorded why it stopped.
    refused = CallRefused.of(ctx._s, decision)
    if errors:
        raise refused from errors[0]
    raise refused


_RETRY: Final = Decision.RETRY


# What ``ctx.llm_call(...)`` returns: a decorator, and a context manager for one block. Native, so that a
# ``with`` costs no Python frame and no GC-tracked object; used as a decorator it calls ``decorate``.
Contained = Block


def decorate(block: Block, fn: Callable[P, R]) -> Callable[P, R]:
    """``block(fn)``: decorates ``fn`` (same parameters and return type for type checkers); an unnamed
    call is named after the function's ``__qualname__``."""
    if not callable(fn):
        raise InvalidArgumentType(
            f"a contained call decorates a function, got {type(fn).__name__}", argument="fn"
        )
    p = block._plan
    opts: WrapOptions = p.options
    if not opts.operation_name:
        opts = dataclasses.replace(opts, operation_name=_qualname(fn))
    return cast(Callable[P, R], _decorate(block._ctx, p.state, p.kind, opts, fn))


def _qualname(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


def contained_call(ctx: ExecutionContext, state: ChainState, kind: CallKind, opts: WrapOptions) -> Contained:
    """``ctx.llm_call(...)`` / ``ctx.tool_call(...)`` with these options (planned anew: not remembered)."""
    return Contained(ctx, plan(state, kind, opts))


def llm_call(
    ctx: ExecutionContext,
    name: str | Callable[..., Any] = "",
    cost: float = 0.0,
    *,
    timeout_ms: int | None = None,
) -> Any:
    """``ctx.llm_call(...)`` in every form the native ``CallForms`` does not answer from the context's
    plans: a decorated function, a timeout, a keyword, a form not planned yet, a wrong argument (rejected
    here, typed, naming it)."""
    return _call_form(ctx, CallKind.LLM, name, cost, timeout_ms)


def tool_call(
    ctx: ExecutionContext,
    name: str | Callable[..., Any] = "",
    cost: float = 0.0,
    *,
    timeout_ms: int | None = None,
) -> Any:
    """``ctx.tool_call(...)``, as ``llm_call``."""
    return _call_form(ctx, CallKind.TOOL, name, cost, timeout_ms)


def _call_form(
    ctx: ExecutionContext, kind: CallKind, name: str | Callable[..., Any], cost: float, timeout_ms: int | None
) -> Any:
    if timeout_ms is None and type(name) is str and type(cost) is float:
        # The common form, planned once per context (exact types: 0.0 and False hash alike).
        plans = ctx._llm_plans if kind == CallKind.LLM else ctx._tool_plans
        return Contained(ctx, plan_named(plans, ctx._s, kind, name, cost))
    if callable(name):
        return contained_call(ctx, ctx._s, kind, WrapOptions())(name)
    return contained_call(ctx, ctx._s, kind, WrapOptions(name, cost, timeout_ms))


def run_contained(  # noqa: PLR0917  (positional: it runs on every decorated call)
    ctx: ExecutionContext,
    s: ChainState,
    kind: CallKind,
    opts: WrapOptions,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """One call of a sync decorated function ``fn(*args, **kwargs)`` as a contained call of ``ctx``:
    returns its result, raises ``CallRefused`` when refused, re-raises its own exception once counted."""
    if not s.plain or opts._rich:
        return _run_wrapped(ctx, s, kind, opts, fn, args, kwargs)
    # The wrap's fast path (``_fast.sync_wrap``) inline. The core checks that the callable it runs is
    # sync (docs/design.md §21): here that is this function, which calls ``fn`` and then checks its
    # result as a sync wrap does (one cached check of this code object, whatever ``fn`` is).
    core = s.core
    name = opts.operation_name
    estimate = opts.cost_estimate_hint
    try:
        node = core.begin_sync(
            run_contained,
            enclosing(core) if s.async_used else None,
            kind,
            name,
            (opts.model or s.llm_model) if kind == CallKind.LLM else None,
            estimate,
        )
    except CallNotAdmitted as refused:
        raise CallRefused.of(s, refuse(s, refused, opts)) from None
    try:
        result = fn(*args, **kwargs)
    except BaseException as exc:
        decision = failed(s, exc, node, opts)
        if decision is _RETRY:
            raise
        raise CallRefused.of(s, decision) from exc
    if result is not None and hasattr(result, "__await__"):
        raise not_sync(s, node, opts, result)
    core.settle(node, name != "", estimate)
    return result


def _run_wrapped(  # noqa: PLR0917  (run_contained's arguments)
    ctx: ExecutionContext,
    state: ChainState,
    kind: CallKind,
    opts: WrapOptions,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> Any:
    """``run_contained`` through the wrap itself: pipeline, breaker, metrics, capture, rich options."""
    box: list[Any] = []
    errors: list[BaseException] = []

    def thunk() -> Any:
        try:
            result = fn(*args, **kwargs)
        except BaseException as exc:
            errors.append(exc)
            raise
        box.append(result)
        return result  # for the context's cost_of

    if state.capture is not None:
        setattr(thunk, INPUT_ATTR, CallInput(fn, args, kwargs))
    wrap = ctx.wrap_llm_call if kind == CallKind.LLM else ctx.wrap_tool_call
    return _outcome(ctx, wrap(thunk, opts), box, errors)


def _decorate(
    ctx: ExecutionContext, state: ChainState, kind: CallKind, opts: WrapOptions, fn: Callable[..., Any]
) -> Any:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            box: list[Any] = []
            errors: list[BaseException] = []

            async def thunk() -> Any:
                try:
                    result = await fn(*args, **kwargs)
                except BaseException as exc:
                    errors.append(exc)
                    raise
                box.append(result)
                return result  # for the context's cost_of

            if state.capture is not None:
                setattr(thunk, INPUT_ATTR, CallInput(fn, args, kwargs))
            decision = await wrap_async(state, thunk, kind, opts)
            return _outcome(ctx, decision, box, errors)

        return run_async

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        return run_contained(ctx, state, kind, opts, fn, args, kwargs)

    return run


Kind = Literal["llm", "tool"]
_KINDS: Final = frozenset({NodeKind.LLM, NodeKind.TOOL})


@overload
def contained(fn: Callable[P, R], /) -> Callable[P, R]: ...
@overload
def contained(
    *, name: str = "", kind: Kind = "llm", cost: float = 0.0, timeout_ms: int | None = None
) -> Callable[[Callable[P, R]], Callable[P, R]]: ...
def contained(
    fn: Callable[P, R] | None = None,
    /,
    *,
    name: str = "",
    kind: Kind = "llm",
    cost: float = 0.0,
    timeout_ms: int | None = None,
) -> Callable[P, R] | Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator (bare or with arguments): each call of the function is a contained call of the context
    current at that moment (``current_context()``), named after the function's ``__qualname__`` unless
    ``name`` is given; outside any context the function simply runs. Same parameters and return type for
    type checkers; a refused call raises ``CallRefused``."""
    if kind not in _KINDS:
        raise InvalidArgument(f"kind must be 'llm' or 'tool', got {kind!r}", argument="kind")
    opts = WrapOptions(name, cost, timeout_ms)  # validated now, not at the first call

    def decorate(func: Callable[P, R]) -> Callable[P, R]:
        if not callable(func):
            raise InvalidArgumentType(
                f"contained decorates a function, got {type(func).__name__}", argument="func"
            )
        named = opts if opts.operation_name else dataclasses.replace(opts, operation_name=func.__qualname__)
        call_kind = CallKind.LLM if kind == "llm" else CallKind.TOOL

        def for_context(ctx: ExecutionContext) -> Callable[P, R]:
            factory = ctx.llm_call if kind == "llm" else ctx.tool_call
            block = factory(named.operation_name, named.cost_estimate_hint, timeout_ms=named.timeout_ms)
            return block(func)

        if inspect.iscoroutinefunction(func):
            afunc = cast(Callable[..., Awaitable[Any]], func)

            @functools.wraps(func)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                ctx = current_context()
                if ctx is None:
                    _log.debug("%s called outside any ExecutionContext: not contained", named.operation_name)
                    return await afunc(*args, **kwargs)
                contained_fn = cast(Callable[..., Awaitable[Any]], for_context(ctx))
                return await contained_fn(*args, **kwargs)

            return cast(Callable[P, R], run_async)

        # Typed as Any and cast once below: a `cast(R, ...)` here would be a function call on every call.
        @functools.wraps(func)
        def run(*args: Any, **kwargs: Any) -> Any:
            ctx = current_context()
            if ctx is None:
                _log.debug("%s called outside any ExecutionContext: not contained", named.operation_name)
                return func(*args, **kwargs)
            return run_contained(ctx, ctx._s, call_kind, named, func, args, kwargs)

        return cast(Callable[P, R], run)

    if fn is not None:
        return decorate(fn)
    return decorate
