"""The fast path of every wrapped call: ``wrap_llm_call`` / ``wrap_tool_call`` themselves."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from chainwarden.containment._outcomes import failed, gate, refuse, succeeded
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["StopNote", "sync_wrap"]

_DEFAULT_OPTIONS: Final = WrapOptions()
_ALLOW: Final = Decision.ALLOW  # a module global is a cheaper load than an enum attribute


class StopNote(threading.local):
    """Why the latest non-ALLOW call on this thread ended as it did; written only off the fast path."""

    reason: str | None = None


def sync_wrap(kind: int) -> Callable[[ExecutionContext, Callable[[], Any], WrapOptions | None], Decision]:
    """Builds ``wrap_llm_call`` (kind 0) / ``wrap_tool_call`` (kind 1): the fast path of every
    wrapped call, two native calls around ``fn`` when no pipeline, breaker, parent or metrics
    need consulting."""

    def wrap(self: ExecutionContext, fn: Callable[[], Any], options: WrapOptions | None = None) -> Decision:
        if not callable(fn):
            raise TypeError(f"fn must be callable, got {type(fn).__name__}")
        opts = _DEFAULT_OPTIONS if options is None else options
        try:
            name = opts.operation_name
            node = self._core.begin(
                self._current.get() if self._async_used else None,
                kind,
                name,
                (opts.model or self._llm_model) if kind == 0 else None,
                opts.cost_estimate_hint,
                self._dispatch,
                True,
            )
        except AttributeError:
            raise _bad_options(options) from None
        if node < 0:
            return refuse(self, -node, opts)
        if self._gated:
            verdict = gate(self, node, kind, opts)
            if verdict is not None:
                return verdict
        try:
            fn()
        except BaseException as exc:
            return failed(self, exc, node, opts)
        if self._plain:
            self._core.succeed(node, name != "", opts.cost_estimate_hint)
            return _ALLOW
        return succeeded(self, node, kind, opts)

    wrap.__name__ = ("wrap_llm_call", "wrap_tool_call")[kind]
    wrap.__qualname__ = f"ExecutionContext.{wrap.__name__}"
    wrap.__doc__ = (
        "Runs ``fn`` as one LLM call of the chain; returns ALLOW, RETRY, HALT or a pipeline verdict.",
        "As ``wrap_llm_call`` for a tool call (tool hooks, no ``before_charge``).",
    )[kind]
    return wrap


def _bad_options(options: object) -> TypeError:
    return TypeError(f"options must be a WrapOptions or None, got {type(options).__name__}")
