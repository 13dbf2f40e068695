"""LangGraph: a graph node as one contained call of a chain (``chainwarden[langgraph]``).

``@contained_node(ctx)`` (or ``contained_node(ctx, name="plan")``) makes each run of a node function a
contained ``tool`` call of ``ctx`` named after the node (default: the function's ``__name__``). The
calls the node makes through ``ChainwardenCallbackHandler`` or an instrumented client are its children.
A refusal raises ``ChainHalted`` before the node runs, which stops ``graph.invoke``; an error of the node
itself is counted against the retry budget and propagates (LangGraph's own retry policy then applies).
Sync and async node functions keep their signature, so LangGraph still passes ``config`` / ``store``
to the nodes that ask for them. See docs/integrations.md.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar, cast

from chainwarden._extras import require
from chainwarden.containment.calls import INPUT_ATTR, CallInput
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgumentType
from chainwarden.integrations._calls import outcome

require("langgraph", "langgraph")

__all__ = ["contained_node"]

P = ParamSpec("P")
R = TypeVar("R")


def contained_node(
    ctx: ExecutionContext, name: str | None = None, *, cost_estimate_hint: float = 0.0
) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: each run of the node function is one contained call of ``ctx``."""
    if not isinstance(ctx, ExecutionContext):
        raise InvalidArgumentType(
            f"ctx must be an ExecutionContext, got {type(ctx).__name__}", argument="ctx"
        )
    if name is not None and not isinstance(name, str):
        raise InvalidArgumentType(f"name must be a str or None, got {type(name).__name__}", argument="name")
    estimate = WrapOptions(cost_estimate_hint=cost_estimate_hint).cost_estimate_hint

    def decorate(fn: Callable[P, R]) -> Callable[P, R]:
        if not callable(fn):
            raise InvalidArgumentType(
                f"contained_node decorates a function, got {type(fn).__name__}", argument="fn"
            )
        opts = WrapOptions(name or getattr(fn, "__name__", "") or type(fn).__name__, estimate)
        if inspect.iscoroutinefunction(fn):
            afn = cast(Callable[..., Awaitable[Any]], fn)

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                box: list[Any] = []
                errors: list[BaseException] = []

                async def thunk() -> Any:
                    try:
                        box.append(await afn(*args, **kwargs))
                    except BaseException as exc:
                        errors.append(exc)
                        raise
                    return box[-1]  # the node's update: its output, when captured

                setattr(thunk, INPUT_ATTR, CallInput(fn, args, kwargs))  # the node's state, when captured
                return outcome(ctx, await ctx.wrap_tool_call_async(thunk, opts), box, errors)

            return cast(Callable[P, R], run_async)

        @functools.wraps(fn)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            box: list[R] = []
            errors: list[BaseException] = []

            def thunk() -> R:
                try:
                    box.append(fn(*args, **kwargs))
                except BaseException as exc:
                    errors.append(exc)
                    raise
                return box[-1]

            setattr(thunk, INPUT_ATTR, CallInput(fn, args, kwargs))
            result: R = outcome(ctx, ctx.wrap_tool_call(thunk, opts), box, errors)
            return result

        return run

    return decorate
