"""``with ctx.llm_call(...):`` — a block of code contained as one call.

The block's node is the parent of wraps made inside it, through the context's ContextVar, which
stays exact when the block awaits (unlike the per-thread stack of sync wraps).
"""

from __future__ import annotations

from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Literal

from chainwarden.containment._outcomes import failed, gate, refuse, succeeded
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["CallRefused", "ContainedBlock"]


class CallRefused(RuntimeError):
    """A contained call did not run (or its result was not accepted)."""

    def __init__(self, decision: Decision, stop_reason: str | None) -> None:
        super().__init__(f"call refused: {decision.value} ({stop_reason or 'unknown'})")
        self.decision = decision
        self.stop_reason = stop_reason


class ContainedBlock:
    """One use per ``with`` statement: entering admits the call (or raises ``CallRefused``),
    leaving closes it — success when the block completes, a counted failure when it raises."""

    def __init__(self, ctx: ExecutionContext, kind: int, opts: WrapOptions) -> None:
        self._ctx = ctx
        self._kind = kind
        self._opts = opts
        self._open: list[tuple[int, Token[int | None]]] = []

    def __enter__(self) -> None:
        ctx, opts = self._ctx, self._opts
        node = ctx._core.begin(
            ctx._current.get(),
            self._kind,
            opts.operation_name,
            (opts.model or ctx._llm_model) if self._kind == 0 else None,
            opts.cost_estimate_hint,
            not ctx._gated,
            False,
        )
        if node < 0:
            raise CallRefused(refuse(ctx, -node, opts), ctx.last_stop_reason)
        if ctx._gated:
            verdict = gate(ctx, node, self._kind, opts)
            if verdict is not None:
                raise CallRefused(verdict, ctx.last_stop_reason)
        ctx._async_used = True
        self._open.append((node, ctx._current.set(node)))

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> Literal[False]:
        ctx = self._ctx
        node, token = self._open.pop()
        ctx._current.reset(token)
        if exc is None:
            decision = succeeded(ctx, node, self._kind, self._opts)
            if decision is not Decision.ALLOW:
                raise CallRefused(decision, ctx.last_stop_reason)
            return False
        decision = failed(ctx, exc, node, self._opts)
        if decision is Decision.RETRY:
            return False  # the block's own exception goes on, counted
        raise CallRefused(decision, ctx.last_stop_reason) from exc
