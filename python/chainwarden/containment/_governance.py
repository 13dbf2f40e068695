"""The memory governor's gate: asked before each call is dispatched, told after it succeeded
(docs/containment.md "Memory calls and memory governance"). A governor that denies, raises or answers
nothing refuses the call (``memory_governance_denied``): it fails closed. Only a denial refuses; other
verdicts (degrade, quarantine) let the call run and reach ``notify_after`` with the call."""

from __future__ import annotations

import logging
from typing import Any, Final

from chainwarden._core import CallKind
from chainwarden.containment._state import ChainState
from chainwarden.containment.memory import MemoryAction, MemoryOperation, MemoryPolicyContext
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgumentType

__all__ = ["DENIED", "admit", "notify", "take"]

logger = logging.getLogger("chainwarden.containment")

DENIED: Final = "memory_governance_denied"

# The reference's mapping of call kinds to memory actions (an LLM call writes, a tool call reads).
_ACTIONS: Final = {
    "memory_read": MemoryAction.READ,
    "memory_write": MemoryAction.WRITE,
    "llm": MemoryAction.WRITE,
    "tool": MemoryAction.READ,
}


def _operation(s: ChainState, kind: CallKind, opts: WrapOptions) -> MemoryOperation:
    meta = s.metadata
    return MemoryOperation(
        action=_ACTIONS[kind.value],
        agent_id=meta.user_id or "",
        namespace=meta.chain_id,
        metadata={"operation_name": opts.operation_name, "kind": kind.value},
    )


def admit(s: ChainState, node: int, kind: CallKind, opts: WrapOptions) -> str | None:
    """Asks the governor about the admitted call ``node``: None to dispatch it (the operation and decision
    are kept for ``notify``), else why it is refused."""
    operation = _operation(s, kind, opts)
    context = MemoryPolicyContext(
        operation=operation,
        chain_id=s.metadata.chain_id,
        request_id=s.metadata.request_id,
        total_memory_ops_in_chain=s.core.counters().step_count,
    )
    try:
        decision = s.governor.evaluate(operation, context)
        if decision is None:
            raise InvalidArgumentType("evaluate() returned None")
        denied = bool(decision.denied)
    except Exception as err:
        # docs/design.md §22: logged, and the call fails closed.
        logger.warning(
            "memory governor raised %s: %s; the call is refused", type(err).__name__, err, exc_info=err
        )
        return f"memory governor error: {type(err).__name__}"
    if denied:
        reason = getattr(decision, "reason", "")
        policy = getattr(decision, "policy_id", "")
        return f"memory governance denied: {reason} (policy={policy})"
    with s.lock:
        s.governed[node] = (operation, decision)
    return None


def take(s: ChainState, node: int) -> tuple[Any, Any] | None:
    """Removes what ``admit`` kept for the call ``node``: (operation, decision), or None."""
    with s.lock:
        return s.governed.pop(node, None)


def notify(s: ChainState, governed: tuple[Any, Any]) -> None:
    """Tells the governor that a call it admitted succeeded. Never raises (logged at WARNING)."""
    operation, decision = governed
    try:
        s.governor.notify_after(operation, decision)
    except Exception:
        logger.warning("memory governor notify_after() raised; the call stays successful", exc_info=True)
