"""``with ctx.llm_call(...):`` — a block of code contained as one call.

The block's node is the parent of wraps made inside it, through the context's ContextVar, which
stays exact when the block awaits (unlike the per-thread stack of sync wraps).
"""

from __future__ import annotations

from contextvars import Token
from types import TracebackType
from typing import TYPE_CHECKING, Literal, Self

from chainwarden._core import CallKind
from chainwarden.containment._outcomes import NO_RESULT, failed, gate, refuse, succeeded
from chainwarden.containment._report import CURRENT_CALL, Binding, bind, enclosing
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment._state import ChainState
    from chainwarden.containment.context import ExecutionContext

__all__ = ["CallRefused", "ChainHalted", "ContainedBlock", "halted"]


class CallRefused(RuntimeError):
    """A contained call did not run (or its result was not accepted).

    ``decision`` is the refusing verdict, ``stop_reason`` why, and ``detail`` the chain's figures
    for that limit at the time (e.g. ``spent $1.0200 of the $1.0000 ceiling``), also in the message.
    """

    _prefix = "call refused"

    def __init__(self, decision: Decision, stop_reason: str | None, detail: str | None = None) -> None:
        text = f"{self._prefix}: {stop_reason or 'unknown'} ({decision.value})"
        super().__init__(f"{text}: {detail}" if detail else text)
        self.decision = decision
        self.stop_reason = stop_reason
        self.detail = detail

    @classmethod
    def of(cls, s: ChainState, decision: Decision, stop_reason: str | None = None) -> Self:
        """The refusal of a call of chain ``s``, with the chain's figures for the limit that refused it
        (``stop_reason`` defaults to the reason the last call on this thread recorded)."""
        reason = s.note.reason if stop_reason is None else stop_reason
        return cls(decision, reason, s.describe_stop(reason))

    def __reduce__(self) -> tuple[type[Self], tuple[Decision, str | None, str | None]]:
        return (type(self), (self.decision, self.stop_reason, self.detail))


class ChainHalted(CallRefused):
    """Containment refused a call made through an integration (a provider client, a LangChain
    callback, a LangGraph node): the run stops here (docs/integrations.md).

    A ``CallRefused``, so code that already catches refusals of ``@ctx.llm_call`` catches these;
    ``stop_reason`` names why (``budget_exceeded``, ``step_limit_exceeded``, ``pipeline_halt``, ...)
    and ``decision`` is the refusing verdict (HALT, or a pipeline's DEGRADE / QUARANTINE / ...)."""

    _prefix = "chain halted"


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
