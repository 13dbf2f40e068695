"""``@ctx.llm_call(...)`` / ``@ctx.tool_call(...)``: contained calls that behave like plain calls.

A decorated function returns its own result. When containment refuses the call it raises
``CallRefused`` (carrying the decision and stop reason); when the function itself fails, its
exception propagates after the failure has been counted.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from chainwarden.containment._async import wrap_async
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["CallRefused", "contained"]


class CallRefused(RuntimeError):
    """A contained call did not run (or its result was not accepted)."""

    def __init__(self, decision: Decision, stop_reason: str | None) -> None:
        super().__init__(f"call refused: {decision.value} ({stop_reason or 'unknown'})")
        self.decision = decision
        self.stop_reason = stop_reason


def _outcome(ctx: ExecutionContext, decision: Decision, box: list[Any], errors: list[BaseException]) -> Any:
    if decision is Decision.ALLOW:
        return box[0]
    if errors and decision is Decision.RETRY:
        raise errors[0]
    # Read at once: nothing else ran on this thread since the wrap recorded why it stopped.
    refused = CallRefused(decision, ctx.last_stop_reason)
    if errors:
        raise refused from errors[0]
    raise refused


def contained(ctx: ExecutionContext, kind: int, opts: WrapOptions) -> Callable[[Callable[..., Any]], Any]:
    def decorate(fn: Callable[..., Any]) -> Any:
        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                box: list[Any] = []
                errors: list[BaseException] = []

                async def thunk() -> None:
                    try:
                        box.append(await fn(*args, **kwargs))
                    except BaseException as exc:
                        errors.append(exc)
                        raise

                decision = await wrap_async(ctx, thunk, kind, opts)
                return _outcome(ctx, decision, box, errors)

            return run_async

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            box: list[Any] = []
            errors: list[BaseException] = []

            def thunk() -> None:
                try:
                    box.append(fn(*args, **kwargs))
                except BaseException as exc:
                    errors.append(exc)
                    raise

            wrap = ctx.wrap_llm_call if kind == 0 else ctx.wrap_tool_call
            return _outcome(ctx, wrap(thunk, opts), box, errors)

        return run

    return decorate
