"""The fast path of every wrapped call: ``wrap_llm_call`` / ``wrap_tool_call`` themselves."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from chainwarden._core import CallKind, CallNotAdmitted
from chainwarden.containment._outcomes import capture_call, failed, gate, not_sync, refuse, succeeded
from chainwarden.containment._report import enclosing
from chainwarden.containment._rich import bind as bind_options
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["sync_wrap"]

_DEFAULT_OPTIONS: Final = WrapOptions()
_ALLOW: Final = Decision.ALLOW  # a module global is a cheaper load than an enum attribute


def sync_wrap(
    kind: CallKind,
) -> Callable[[ExecutionContext, Callable[[], Any], WrapOptions | None], Decision]:
    """Builds ``wrap_llm_call`` / ``wrap_tool_call``: the fast path of every wrapped call, two
    native calls around ``fn`` when no pipeline, breaker, parent, metrics or ``cost_of`` need
    consulting."""
    is_llm = kind == CallKind.LLM

    def wrap(self: ExecutionContext, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
        s = self._s
        opts = _DEFAULT_OPTIONS if options is None else options
        core = s.core
        try:
            name = opts.operation_name
            # The core refuses a coroutine function (docs/design.md §21) before counting anything.
            node = core.begin_sync(
                fn,
                enclosing(core) if s.async_used else None,
                kind,
                name,
                (opts.model or s.llm_model) if is_llm else None,
                opts.cost_estimate_hint,
            )
        except CallNotAdmitted as refused:
            return refuse(s, refused, opts)
        except AttributeError:
            raise _bad_options(options) from None
        if s.gated:
            verdict = gate(s, node, kind, opts)
            if verdict is not None:
                return verdict
        rich = opts._rich
        if rich:
            bind_options(s, node, opts)
        # report_cost finds this call through the core's per-thread stack of open sync calls.
        try:
            result = fn()
        except BaseException as exc:
            if s.capture is not None:
                capture_call(s, node, fn)
            return failed(s, exc, node, opts)
        if result is not None and hasattr(result, "__await__"):
            raise not_sync(s, node, opts, result)
        if s.plain and not rich:
            core.settle(node, name != "", opts.cost_estimate_hint)
            return _ALLOW
        if s.capture is not None:
            capture_call(s, node, fn, result, has_output=True)
        return succeeded(s, node, kind, opts, result)

    wrap.__name__ = f"wrap_{kind.value}_call"
    wrap.__qualname__ = f"ExecutionContext.{wrap.__name__}"
    wrap.__doc__ = (
        "Runs ``fn`` as one LLM call of the chain; returns ALLOW, RETRY, HALT or a pipeline verdict."
        if is_llm
        else f"As ``wrap_llm_call`` for a {kind.value} call (no ``before_charge``)."
    )
    return wrap


def _bad_options(options: object) -> TypeError:
    return TypeError(f"options must be a WrapOptions or None, got {type(options).__name__}")
