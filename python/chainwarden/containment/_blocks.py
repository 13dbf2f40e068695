"""``with ctx.llm_call(...):`` — a block of code contained as one call.

The block's node is the parent of wraps made inside it, through the context's ContextVar, which
stays exact when the block awaits (unlike the per-thread stack of sync wraps).
"""

from __future__ import annotations

from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from chainwarden._core import CallKind
from chainwarden.containment._outcomes import NO_RESULT, failed, gate, refuse, succeeded
from chainwarden.containment._report import CURRENT_CALL, Binding, bind, enclosing
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import CallRefused, ChainHalted
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment._state import ChainState
    from chainwarden.containment.context import ExecutionContext

__all__ = ["CallRefused", "ChainHalted", "ContainedBlock", "halted"]


def halted(ctx: ExecutionContext, decision: Decision) -> ChainHalted:
    """The ``ChainHalted`` of a call of ``ctx`` that just returned ``decision`` on this thread."""
    return ChainHalted.of(ctx._s, decision)


class ContainedBlock:
    """One use per ``with`` statement: entering admits the call (or raises ``CallRefused``),
    leaving closes it — success when the block completes, a counted failure when it raises."""

    def __init__(self, state: ChainState, kind: CallKind, opts: WrapOptions) -> None:
        self._s = state
        self._kind = kind
        self._opts = opts
        self._open: list[tuple[int, Token[Binding | None]]] = []

    def __enter__(self) -> None:
        s, opts = self._s, self._opts
        node = s.core.begin(
            None,
            enclosing(s.core),
            self._kind,
            opts.operation_name,
            (opts.model or s.llm_model) if self._kind == CallKind.LLM else None,
            opts.cost_estimate_hint,
            not s.gated,
            False,
        )
        if not isinstance(node, int):
            raise CallRefused.of(s, refuse(s, node, opts))
        if s.gated:
            verdict = gate(s, node, self._kind, opts)
            if verdict is not None:
                raise CallRefused.of(s, verdict)
        s.async_used = True
        self._open.append((node, CURRENT_CALL.set(bind(s.core, node))))

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        s = self._s
        node, bound = self._open.pop()
        CURRENT_CALL.reset(bound)
        if exc is None:
            # A block has no result: it is charged what it reported, else its estimate.
            decision = succeeded(s, node, self._kind, self._opts, NO_RESULT)
            if decision is not Decision.ALLOW:
                raise CallRefused.of(s, decision)
            return False
        decision = failed(s, exc, node, self._opts)
        if decision is Decision.RETRY:
            return False  # the block's own exception goes on, counted
        raise CallRefused.of(s, decision) from exc
