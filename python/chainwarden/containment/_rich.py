"""What ``WrapOptions(response_hint=, partial_buffer=, reconciliation_callback=)`` add to a call
(docs/containment.md "Streamed calls, response usage and reconciliation"). Calls without them never
come here: the wrap's fast path reads one flag (``WrapOptions._rich``)."""

from __future__ import annotations

import logging

from chainwarden._core import CallKind
from chainwarden.containment._state import ChainState
from chainwarden.containment.types import WrapOptions

__all__ = ["bind", "priced_hint", "reconcile"]

logger = logging.getLogger("chainwarden.containment")


def bind(s: ChainState, node: int, opts: WrapOptions) -> None:
    """Before the callable runs: its options' partial buffer becomes the call's."""
    if opts.partial_buffer is not None:
        s.partials.bind(node, opts.partial_buffer)


def priced_hint(s: ChainState, kind: CallKind, opts: WrapOptions) -> tuple[float | None, int, int] | None:
    """(cost, tokens in, tokens out) of an LLM call's ``response_hint``, priced by its usage (cost None when
    its model has no known price); None without a hint or usage. Pricing never fails the call (logged)."""
    if opts.response_hint is None or not kind.is_llm:
        return None
    from chainwarden.integrations.providers import priced_response  # noqa: PLC0415  (integrations import containment)

    try:
        return priced_response(opts.response_hint, opts.model or s.llm_model or "")
    except Exception:
        logger.warning(
            "response_hint of call %r could not be read; charging its estimate",
            opts.operation_name,
            exc_info=True,
        )
        return None


def reconcile(s: ChainState, opts: WrapOptions, cost: float, tokens: tuple[int, int] | None) -> None:
    """After a call succeeded at ``cost``: its options' buffer is complete, its reconciliation callback
    and the metrics' ``record_tokens`` hear of it. A callback that raises is logged, never raised
    (docs/design.md §22)."""
    if opts.partial_buffer is not None:
        try:
            opts.partial_buffer.mark_complete()
        except Exception:
            logger.warning(
                "partial_buffer.mark_complete() raised for call %r", opts.operation_name, exc_info=True
            )
    if tokens is not None and s.metrics is not None and hasattr(s.metrics, "record_tokens"):
        s.metrics.record_tokens(s.metadata.chain_id, tokens[0], tokens[1])
    callback = opts.reconciliation_callback
    if callback is not None:
        try:
            callback.on_reconcile(opts.cost_estimate_hint, cost)
        except Exception:
            logger.warning(
                "reconciliation_callback.on_reconcile raised for call %r; the call stays successful",
                opts.operation_name,
                exc_info=True,
            )
