"""How the other packages reach containment: held calls, the call running now, what a chain captures and
has spent. Integrations, the runtime and the DAG use these names only, never containment's private modules
or a context's private state, so containment changes behind one door (ARCHITECTURE.md "Layering").

A held call is admitted now and settled later (a stream, a framework callback): docs/containment.md
"Streamed calls, response usage and reconciliation".
"""

from __future__ import annotations

from chainwarden.containment._blocks import halted
from chainwarden.containment._capture import INPUT_ATTR, SELF_CAPTURED, CallInput, Capture
from chainwarden.containment._current import current_context
from chainwarden.containment._held import HeldCall, open_call
from chainwarden.containment._report import current_call, flag_current_call, report_cost
from chainwarden.containment.context import ExecutionContext

__all__ = [
    "INPUT_ATTR",
    "SELF_CAPTURED",
    "CallInput",
    "Capture",
    "HeldCall",
    "capture_of",
    "current_call",
    "current_context",
    "flag_current_call",
    "halted",
    "holds",
    "open_call",
    "report_cost",
    "spent_usd",
]


def capture_of(ctx: ExecutionContext) -> Capture | None:
    """What `ctx`'s chain keeps of each call's content (docs/containment.md "Content capture"); None: none."""
    return ctx._s.capture


def spent_usd(ctx: ExecutionContext) -> float:
    """The cost `ctx`'s chain has settled so far (what calls in flight reserve is `ctx.reserved_usd`)."""
    return ctx._s.core.counters().cost_usd


def holds(ctx: ExecutionContext, call: HeldCall) -> bool:
    """Whether `call` was opened on `ctx`'s own chain (not a parent's or a child's)."""
    return call.chain is ctx._s
