"""``with ctx.llm_call(...):`` — a block of code contained as one call.

The block's node is the parent of wraps made inside it, through the core's ``CURRENT_CALL``
ContextVar, which stays exact when the block awaits (unlike the per-thread stack of sync wraps).
The block itself is native (``chainwarden._core.Block``): on a chain with nothing to consult besides
the core it admits and settles its call without running Python; otherwise, and when a block fails
or is refused, it calls the functions here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

from chainwarden._core import CallKind, CallNotAdmitted, CallPlan, ChainCore, StopCause
from chainwarden.containment._outcomes import NO_RESULT, failed, gate, refuse, succeeded
from chainwarden.containment._report import enclosing
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import CallRefused, ChainHalted
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment._state import ChainState
    from chainwarden.containment.context import ExecutionContext

__all__ = [
    "CallRefused",
    "ChainHalted",
    "Plans",
    "admit_open",
    "enter_block",
    "exit_block",
    "halted",
    "plan",
    "plan_named",
    "refused_block",
]


def halted(ctx: ExecutionContext, decision: Decision) -> ChainHalted:
    """The ``ChainHalted`` of a call of ``ctx`` that just returned ``decision`` on this thread."""
    return ChainHalted.of(ctx._s, decision)


def plan(s: ChainState, kind: CallKind, opts: WrapOptions) -> CallPlan:
    """How every block of ``kind`` with ``opts`` in chain ``s`` admits its call: natively when the
    chain has nothing to consult besides its own core and the options ask for nothing more."""
    core = s.core
    native = s.plain and not opts._rich and type(core) is ChainCore
    model = (opts.model or s.llm_model) if kind == CallKind.LLM else None
    return CallPlan(
        s, kind, opts, opts.operation_name, model, opts.cost_estimate_hint, core if native else None
    )


# Forms a context remembers plans for (a program names its blocks: rarely reached).
_MAX_PLANS = 1024

# name -> the plan of its blocks without an estimate (the common form: one lookup of an interned str);
# (name, estimate) -> the others.
Plans = dict[str | tuple[str, float], CallPlan]


def plan_named(plans: Plans, s: ChainState, kind: CallKind, name: str, cost: float) -> CallPlan:
    """The plan of ``ctx.llm_call(name, cost)`` (or ``tool_call``) blocks: the one remembered in ``plans``
    (the context's, one per kind, which the native ``CallForms`` reads), else a new one, remembered once the
    options are validated. The context holds them, not the chain state they point to: no reference cycle."""
    key: str | tuple[str, float] = name if cost == 0.0 else (name, cost)
    known = plans.get(key)
    if known is not None:
        return known
    p = plan(s, kind, WrapOptions(name, cost))
    if len(plans) < _MAX_PLANS:
        plans[key] = p
    return p


def admit_open(
    s: ChainState, kind: CallKind, opts: WrapOptions, parent: int | None, refusal: type[CallRefused]
) -> int:
    """Admits a call that stays open off the native path (a block, a held call) under ``parent`` (None:
    the enclosing call): its node, or raises ``refusal`` with nothing left open."""
    try:
        node = s.core.begin(
            enclosing(s.core) if parent is None else parent,
            kind,
            opts.operation_name,
            (opts.model or s.llm_model) if kind == CallKind.LLM else None,
            opts.cost_estimate_hint,
        )
    except CallNotAdmitted as refused:
        raise refusal.of(s, refuse(s, refused, opts)) from None  # `refuse` notes the reason `of` reads
    if s.gated:
        verdict = gate(s, node, kind, opts)
        if verdict is not None:
            raise refusal.of(s, verdict)
    return node


def enter_block(p: CallPlan) -> int:
    """Admits a block's call off the native path; returns its node or raises ``CallRefused``."""
    s: ChainState = p.state
    node = admit_open(s, p.kind, p.options, None, CallRefused)
    s.async_used = True
    return node


def refused_block(p: CallPlan, cause: StopCause, node: int) -> NoReturn:
    """The core refused a block on the native path (``node``, recorded halted): the refusal is reported as
    a wrap's is, and raised."""
    s: ChainState = p.state
    raise CallRefused.of(s, refuse(s, CallNotAdmitted(cause, node), p.options))


def exit_block(p: CallPlan, node: int, exc: BaseException | None) -> None:
    """Closes a block's call off the native path: success when ``exc`` is None, else a counted
    failure. Raises ``CallRefused`` when containment refuses the outcome; returns when the block's
    own exception (if any) should go on."""
    s: ChainState = p.state
    opts: WrapOptions = p.options
    if exc is None:
        # A block has no result: it is charged what it reported, else its estimate.
        decision = succeeded(s, node, p.kind, opts, NO_RESULT)
        if decision is not Decision.ALLOW:
            raise CallRefused.of(s, decision)
        return
    decision = failed(s, exc, node, opts)
    if decision is Decision.RETRY:
        return  # the block's own exception goes on, counted
    raise CallRefused.of(s, decision) from exc
