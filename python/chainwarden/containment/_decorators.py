"""``@ctx.llm_call(...)`` / ``@ctx.tool_call(...)``: contained calls that behave like plain calls.

A decorated function returns its own result. When containment refuses the call it raises
``CallRefused`` (carrying the decision and stop reason); when the function itself fails, its
exception propagates after the failure has been counted. The same object used as ``with``
contains a block instead of a function (see ``_blocks``).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from chainwarden._core import CallKind
from chainwarden.containment._async import wrap_async
from chainwarden.containment._blocks import CallRefused, ContainedBlock
from chainwarden.containment._capture import INPUT_ATTR, CallInput
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgumentType
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment._state import ChainState
    from chainwarden.containment.context import ExecutionContext

__all__ = ["CallRefused", "contained"]

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


class Contained(ContainedBlock):
    """What ``ctx.llm_call(...)`` returns: a decorator, and a context manager for one block."""

    def __init__(self, ctx: ExecutionContext, state: ChainState, kind: CallKind, opts: WrapOptions) -> None:
        super().__init__(state, kind, opts)
        self._ctx = ctx

    def __call__(self, fn: Callable[P, R]) -> Callable[P, R]:
        """Decorates ``fn`` (same parameters and return type for type checkers); an unnamed call is
        named after the function's ``__qualname__``."""
        if not callable(fn):
            raise InvalidArgumentType(
                f"a contained call decorates a function, got {type(fn).__name__}", argument="fn"
            )
        opts = self._opts
        if not opts.operation_name:
            opts = dataclasses.replace(opts, operation_name=_qualname(fn))
        return cast(Callable[P, R], _decorate(self._ctx, self._s, self._kind, opts, fn))


def _qualname(fn: Callable[..., Any]) -> str:
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    return name if isinstance(name, str) else type(fn).__name__


def contained(ctx: ExecutionContext, state: ChainState, kind: CallKind, opts: WrapOptions) -> Contained:
    return Contained(ctx, state, kind, opts)


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

    return run
