"""What happens to a wrapped call besides the fast path: refusals, pipeline and breaker gates,
settlement with side effects, and failures. The core decides every containment rule (which
limit refuses, what the retry budget says, what a call is charged); this module only runs the
Python objects around it (pipeline, breaker, metrics, ``cost_of``) and logs the stops."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any, Final

from chainwarden._core import CallKind, CallNotAdmitted, ClosedCall, StopCause
from chainwarden.containment import _governance as governance
from chainwarden.containment import _rich as rich
from chainwarden.containment._capture import SELF_CAPTURED, input_of, keep
from chainwarden.containment._state import ChainState
from chainwarden.containment.types import WrapOptions
from chainwarden.shield.policy import PolicyContext
from chainwarden.shield.types import Decision, ToolCallContext
from chainwarden.vocab import CallStatus

__all__ = ["NO_RESULT", "capture_call", "failed", "gate", "not_sync", "refuse", "spent", "succeeded"]

logger = logging.getLogger("chainwarden.containment")

# What a ``with ctx.llm_call():`` block hands to settlement: it has no result for ``cost_of``.
NO_RESULT: Final = object()


def capture_call(
    s: ChainState, node: int, fn: object, result: object = None, *, has_output: bool = False
) -> None:
    """Keeps a wrapped call's input (and output, when it returned) on its node (docs/containment.md,
    "Content capture"); only called when capture is on."""
    capture = s.capture
    declared = input_of(fn)
    if capture is not None and declared is not SELF_CAPTURED:
        keep(capture, s.core, node, capture.entries(input=declared, output=result, has_output=has_output))


def _window_halt(events: list[Any]) -> bool:
    return any(e.hook == "BudgetWindowHook" and e.decision == Decision.HALT for e in events)


def refuse(s: ChainState, refused: CallNotAdmitted, opts: WrapOptions) -> Decision:
    stop = refused.cause
    reason = stop.reason
    if stop == StopCause.TIMEOUT:
        s.on_timeout()
    elif stop != StopCause.ABORTED:
        # The event names the refused call (its node, halted with the reason), so an exporter puts it on
        # that call's span rather than the chain's (docs/integrations.md, "What a span looks like").
        s.forced_stop(reason, refusal_detail(s, stop, opts), node_id=s.core.node_name(refused.node))
    s.note.reason = reason
    s.count_decision("HALT")
    return Decision.HALT


def refusal_detail(s: ChainState, stop: StopCause, opts: WrapOptions) -> str:
    detail = getattr(stop, "detail", None)  # the shared budget's refusal says why (budget/_gate.py)
    if isinstance(detail, str):
        return detail
    estimate = opts.cost_estimate_hint if stop == StopCause.ESTIMATE else None
    return s.core.describe_stop(stop.reason, estimate)


def tool_ctx(
    s: ChainState, node_id: int, opts: WrapOptions, cost_usd: float | None = None
) -> ToolCallContext:
    meta = s.metadata
    return ToolCallContext(
        request_id=meta.request_id,
        user_id=meta.user_id,
        session_id=s.core.node_name(node_id),
        tool_name=opts.operation_name or None,
        model=opts.model or meta.model,
        cost_usd=cost_usd,
        metadata={
            "chain_id": meta.chain_id,
            "org_id": meta.org_id,
            "team": meta.team,
            "service": meta.service,
            **_tag_entries(meta.tags),
        },
    )


def _tag_entries(tags: Mapping[str, str] | tuple[str, ...]) -> Mapping[str, Any]:
    """Dict tags are entries of a hook's metadata (as in veronica-core); a list of tags is one entry."""
    if isinstance(tags, Mapping):
        return tags
    return {"tags": list(tags)} if tags else {}


def spent(s: ChainState, closed: ClosedCall) -> ClosedCall:
    """What a call that did not succeed reported before it ended is charged like a success's cost
    (docs/design.md §30): to the parent chain and the metrics (the core already counted it)."""
    cost = closed.charged_usd
    if cost > 0.0:
        if s.parent is not None:
            s.parent.propagate_child_cost(cost)
        if s.metrics is not None:
            s.metrics.record_cost(s.metadata.chain_id, cost)
    return closed


def halt_admitted(s: ChainState, node_id: int, opts: WrapOptions, why: str) -> None:
    closed = s.core.fail(
        node_id, opts.operation_name != "", opts.cost_estimate_hint, False, CallStatus.HALTED, "", why
    )
    spent(s, closed)
    s.count_decision("HALT")
    s.note.reason = why


def gate(s: ChainState, node_id: int, kind: CallKind, opts: WrapOptions) -> Decision | None:
    """Pipeline, then circuit breaker. Returns the refusing decision, or None to dispatch."""
    try:
        pipeline = s.pipeline
        if pipeline is not None and kind.consults_pipeline:  # memory calls skip these hooks
            tctx = tool_ctx(s, node_id, opts)
            raw = pipeline.before_llm_call(tctx) if kind == CallKind.LLM else pipeline.before_tool_call(tctx)
            if raw != Decision.ALLOW:
                verdict = Decision(str(getattr(raw, "value", raw)))
                why = "pipeline_halt"
                if verdict is Decision.HALT and _window_halt(s.mirror_pipeline()):
                    why = "provider_rate_limit"
                    s.forced_stop(why, "BudgetWindowHook returned HALT")
                else:
                    s.mirror_pipeline()
                halt_admitted(s, node_id, opts, why)
                return verdict
        breaker = s.breaker
        if breaker is not None:
            counters = s.core.counters()
            policy_ctx = PolicyContext(
                cost_usd=counters.cost_usd,
                step_count=counters.step_count,
                chain_id=s.metadata.chain_id,
                entity_id=s.metadata.user_id or "",
            )
            decision = breaker.check(policy_ctx)
            if not decision.allowed:
                s.forced_stop("circuit_open", f"circuit breaker denied: {decision.reason}")
                halt_admitted(s, node_id, opts, "circuit_open")
                return Decision.HALT
        if s.governor is not None:
            denied = governance.admit(s, node_id, kind, opts)
            if denied is not None:
                s.emit(governance.DENIED, denied)
                halt_admitted(s, node_id, opts, governance.DENIED)
                return Decision.HALT
    except Exception as err:
        return hook_raised(s, node_id, opts, err)
    except BaseException:
        hook_failed(s, node_id, opts)
        raise
    s.core.dispatch(node_id)
    return None


def hook_raised(s: ChainState, node_id: int, opts: WrapOptions, err: Exception) -> Decision:
    """A pipeline, breaker or hook raised: logged, and the call fails closed (docs/design.md §22)."""
    logger.warning(
        "containment hook raised %s: %s; the call is halted", type(err).__name__, err, exc_info=err
    )
    hook_failed(s, node_id, opts)
    s.count_decision("HALT")
    s.note.reason = "hook_error"
    return Decision.HALT


def hook_failed(s: ChainState, node_id: int, opts: WrapOptions, error_class: str = "HookError") -> None:
    # A hook that raises must not leak the call's reservations or leave its node open.
    closed = s.core.fail(
        node_id, opts.operation_name != "", opts.cost_estimate_hint, False, CallStatus.ERROR, error_class
    )
    spent(s, closed)


def _priced(s: ChainState, result: Any, opts: WrapOptions) -> float | None:
    """``cost_of(result)``, or None when it has no answer. A raising or invalid ``cost_of`` is a
    user callback failing: logged, and the call is charged its estimate (docs/design.md §22)."""
    cost_of = s.cost_of
    if cost_of is None or result is NO_RESULT:
        return None
    try:
        cost = cost_of(result)
    except Exception:
        logger.warning(
            "cost_of raised for call %r; charging its estimate", opts.operation_name, exc_info=True
        )
        return None
    if cost is None:
        return None
    value = -1.0
    if not isinstance(cost, bool) and isinstance(cost, int | float | Decimal):
        try:
            value = float(cost)
        except (OverflowError, ValueError):
            value = -1.0
    if not 0.0 <= value < math.inf:
        logger.warning(
            "cost_of returned %r for call %r (not a finite number >= 0); charging its estimate",
            cost,
            opts.operation_name,
        )
        return None
    return value


def succeeded(s: ChainState, node_id: int, kind: CallKind, opts: WrapOptions, result: Any) -> Decision:
    """Settles a completed call (docs/design.md §20): charged what it reported, else what
    ``cost_of(result)`` says, else its estimate."""
    core = s.core
    estimate = opts.cost_estimate_hint
    named = opts.operation_name != ""
    reported = core.take_report(node_id)
    governed = governance.take(s, node_id) if s.governor is not None else None
    hinted = None
    if reported is not None:
        actual: float | None = reported.cost_usd
        tokens_in, tokens_out = reported.tokens_in, reported.tokens_out
    else:
        actual, tokens_in, tokens_out = _priced(s, result, opts), None, None
        if actual is None and opts._rich:
            # Third source of an actual cost (docs/design.md §20): the response's usage, priced.
            hinted = rich.priced_hint(s, kind, opts)
            if hinted is not None:
                actual, tokens_in, tokens_out = hinted
    cost = estimate if actual is None else actual
    if kind == CallKind.LLM and cost > 0.0 and s.pipeline is not None:
        try:
            raw = s.pipeline.before_charge(tool_ctx(s, node_id, opts, cost), cost)
        except Exception as err:
            return hook_raised(s, node_id, opts, err)
        except BaseException:
            hook_failed(s, node_id, opts)
            raise
        if raw != Decision.ALLOW:
            s.mirror_pipeline()
            halt_admitted(s, node_id, opts, "before_charge_halt")
            return Decision(str(getattr(raw, "value", raw)))
    if actual is None and tokens_in is not None:
        actual = estimate  # priced usage of an unknown model: the estimate, with the tokens recorded
    cost = core.succeed(node_id, named, estimate, actual, tokens_in, tokens_out)
    if governed is not None:
        governance.notify(s, governed)
    if opts._rich:
        rich.reconcile(s, opts, cost, None if hinted is None else (hinted[1], hinted[2]))
    if s.breaker is not None:
        s.breaker.record_success()
    if cost > 0.0 and s.parent is not None:
        s.parent.propagate_child_cost(cost)
    if s.metrics is not None:
        s.metrics.record_cost(s.metadata.chain_id, cost)
        s.count_decision("ALLOW")
    return Decision.ALLOW


def not_sync(s: ChainState, node_id: int, opts: WrapOptions, result: Any) -> TypeError:
    """docs/design.md §21: a sync wrap whose callable returned an awaitable. Nothing is counted
    (the node closes as an error without a step, a cost or a retry) and the awaitable is closed
    so it does not warn that it was never awaited."""
    hook_failed(s, node_id, opts, "TypeError")
    close = getattr(result, "close", None)
    if callable(close):
        close()
    return TypeError(
        f"a sync wrap got a callable returning {type(result).__name__}; "
        "use wrap_llm_call_async / wrap_tool_call_async for coroutines"
    )


def _message(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<unprintable {type(exc).__name__}>"


def failed(s: ChainState, exc: BaseException, node_id: int, opts: WrapOptions) -> Decision:
    core = s.core
    if s.governor is not None:
        governance.take(s, node_id)  # a failed call is not reported to the governor
    named = opts.operation_name != ""
    estimate = opts.cost_estimate_hint
    if logger.isEnabledFor(logging.DEBUG):
        # docs/design.md §22: the record keeps the message; the traceback goes to the log.
        logger.debug("contained call %r failed", opts.operation_name, exc_info=exc)
    cause = core.cancel_cause
    if cause is not None:
        # The chain was cancelled while the call ran: its failure is the cancellation's doing.
        why = cause.reason
        spent(s, core.fail(node_id, named, estimate, False, cause.status, "", why, _message(exc)))
        s.note.reason = why
        reraise_signals(exc)
        return Decision.HALT
    pipeline = s.pipeline
    try:
        verdict = Decision.RETRY if pipeline is None else pipeline.on_error(tool_ctx(s, node_id, opts), exc)
        if s.breaker is not None:
            s.breaker.record_failure(error=exc)
    except Exception as err:
        return hook_raised(s, node_id, opts, err)
    except BaseException:
        hook_failed(s, node_id, opts)
        raise
    if verdict == Decision.HALT:
        s.mirror_pipeline()
        spent(
            s,
            core.fail(node_id, named, estimate, False, CallStatus.HALTED, "", "pipeline_halt", _message(exc)),
        )
        s.count_decision("HALT")
        s.note.reason = "pipeline_halt"
        reraise_signals(exc)
        return Decision.HALT
    error_class = type(exc).__name__
    closed = spent(
        s, core.fail(node_id, named, estimate, True, CallStatus.ERROR, error_class, None, _message(exc))
    )
    stop = closed.stop
    if stop is not None:
        # docs/design.md §34 provider_error: the failure that finds the retry budget spent stops
        # the chain now; retry_budget_exceeded: a failure on another thread stopped it first.
        budget = s.config.max_retries_total
        if stop == "provider_error":
            detail = f"{error_class} found the retry budget of {budget} spent"
        else:
            detail = f"retry budget {budget} exhausted"
        s.forced_stop(stop, detail, error_class=error_class)
        s.note.reason = stop
        reraise_signals(exc)
        return Decision.HALT
    reraise_signals(exc)
    s.note.reason = "retry"
    return Decision.RETRY


def reraise_signals(exc: BaseException) -> None:
    # Ctrl-C and interpreter exit belong to the process, not to the chain's retry logic.
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        raise exc
