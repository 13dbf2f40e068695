"""What happens to a wrapped call besides the fast path: refusals, pipeline and breaker gates,
completion with side effects, and failures (retry budget, cancellation, provider_error)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from chainwarden.containment.types import WrapOptions
from chainwarden.shield.policy import PolicyContext
from chainwarden.shield.types import Decision, ToolCallContext

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["failed", "gate", "refuse", "succeeded"]

# ChainCore outcome codes (see rust/py/src/containment.rs).
_HALTED, _ABORTED, _TIMEOUT, _ERROR = 2, 3, 4, 5
# ChainCore stop codes -> seed 003 §6 stop reason (index = code).
_STOPS: Final = (
    "",
    "aborted",
    "budget_exceeded",
    "step_limit_exceeded",
    "retry_budget_exceeded",
    "timeout",
    "budget_exceeded",
)
CAUSE_ABORTED, CAUSE_BUDGET, CAUSE_TIMEOUT = 1, 2, 5
# Cancellation cause -> (stop reason, node status) of a call that was running when it happened.
_CANCELLED: Final[dict[int, tuple[str, int]]] = {
    CAUSE_ABORTED: ("aborted", _ABORTED),
    CAUSE_BUDGET: ("budget_exceeded", _HALTED),
    CAUSE_TIMEOUT: ("timeout", _TIMEOUT),
}


def _window_halt(events: list[Any]) -> bool:
    return any(e.hook == "BudgetWindowHook" and e.decision == Decision.HALT for e in events)


def refuse(ctx: ExecutionContext, code: int, opts: WrapOptions) -> Decision:
    stop_reason = _STOPS[code]
    if code == CAUSE_TIMEOUT:
        ctx._on_timeout()
    elif code != CAUSE_ABORTED:
        ctx._forced_stop(stop_reason, refusal_detail(ctx, code, opts))
    ctx._note.reason = stop_reason
    count_decision(ctx, "HALT")
    return Decision.HALT


def refusal_detail(ctx: ExecutionContext, code: int, opts: WrapOptions) -> str:
    cfg = ctx._config
    if code == 2:
        cost = ctx._core.counters()[1]
        return f"cost ${cost:.4f} >= ceiling ${cfg.max_cost_usd:.4f}"
    if code == 3:
        return f"step limit {cfg.max_steps} reached"
    if code == 4:
        return f"retry budget {cfg.max_retries_total} exhausted"
    hint = opts.cost_estimate_hint
    return f"cost estimate ${hint:.4f} would exceed chain ceiling ${cfg.max_cost_usd:.4f}"


def tool_ctx(
    ctx: ExecutionContext, node_id: int, opts: WrapOptions, cost_usd: float | None = None
) -> ToolCallContext:
    meta = ctx._metadata
    return ToolCallContext(
        request_id=meta.request_id,
        user_id=meta.user_id,
        session_id=ctx._core.node_name(node_id),
        tool_name=opts.operation_name or None,
        model=opts.model or meta.model,
        cost_usd=cost_usd,
        metadata={
            "chain_id": meta.chain_id,
            "org_id": meta.org_id,
            "team": meta.team,
            "service": meta.service,
            **meta.tags,
        },
    )


def halt_admitted(ctx: ExecutionContext, node_id: int, opts: WrapOptions, why: str) -> None:
    ctx._core.fail(node_id, opts.operation_name != "", opts.cost_estimate_hint, False, _HALTED, "", why)
    count_decision(ctx, "HALT")
    ctx._note.reason = why


def gate(ctx: ExecutionContext, node_id: int, kind: int, opts: WrapOptions) -> Decision | None:
    """Pipeline, then circuit breaker. Returns the refusing decision, or None to dispatch."""
    try:
        pipeline = ctx._pipeline
        if pipeline is not None:
            tctx = tool_ctx(ctx, node_id, opts)
            raw = pipeline.before_llm_call(tctx) if kind == 0 else pipeline.before_tool_call(tctx)
            if raw != Decision.ALLOW:
                verdict = Decision(str(getattr(raw, "value", raw)))
                why = "pipeline_halt"
                if verdict is Decision.HALT and _window_halt(ctx._mirror_pipeline()):
                    why = "provider_rate_limit"
                    ctx._forced_stop(why, "BudgetWindowHook returned HALT")
                else:
                    ctx._mirror_pipeline()
                halt_admitted(ctx, node_id, opts, why)
                return verdict
        breaker = ctx._breaker
        if breaker is not None:
            steps, cost = ctx._core.counters()[:2]
            policy_ctx = PolicyContext(
                cost_usd=cost,
                step_count=steps,
                chain_id=ctx._metadata.chain_id,
                entity_id=ctx._metadata.user_id or "",
            )
            decision = breaker.check(policy_ctx)
            if not decision.allowed:
                ctx._forced_stop("circuit_open", f"circuit breaker denied: {decision.reason}")
                halt_admitted(ctx, node_id, opts, "circuit_open")
                return Decision.HALT
    except BaseException:
        hook_failed(ctx, node_id, opts)
        raise
    ctx._core.dispatch(node_id)
    return None


def hook_failed(ctx: ExecutionContext, node_id: int, opts: WrapOptions) -> None:
    # A hook that raises must not leak the call's reservations or leave its node open.
    ctx._core.fail(node_id, opts.operation_name != "", opts.cost_estimate_hint, False, _ERROR, "HookError")


def succeeded(ctx: ExecutionContext, node_id: int, kind: int, opts: WrapOptions) -> Decision:
    cost = opts.cost_estimate_hint
    if kind == 0 and cost > 0.0 and ctx._pipeline is not None:
        try:
            raw = ctx._pipeline.before_charge(tool_ctx(ctx, node_id, opts, cost), cost)
        except BaseException:
            hook_failed(ctx, node_id, opts)
            raise
        if raw != Decision.ALLOW:
            ctx._mirror_pipeline()
            halt_admitted(ctx, node_id, opts, "before_charge_halt")
            return Decision(str(getattr(raw, "value", raw)))
    ctx._core.succeed(node_id, opts.operation_name != "", cost)
    if ctx._breaker is not None:
        ctx._breaker.record_success()
    if cost > 0.0 and ctx._parent is not None:
        ctx._parent._propagate_child_cost(cost)
    if ctx._metrics is not None:
        ctx._metrics.record_cost(ctx._metadata.chain_id, cost)
        count_decision(ctx, "ALLOW")
    return Decision.ALLOW


def failed(ctx: ExecutionContext, exc: BaseException, node_id: int, opts: WrapOptions) -> Decision:
    cause = ctx._core.cancel_cause
    if cause:
        # The chain was cancelled while the call ran: its failure is the cancellation's doing.
        why, status = _CANCELLED[cause]
        ctx._core.fail(node_id, opts.operation_name != "", opts.cost_estimate_hint, False, status, "", why)
        ctx._note.reason = why
        reraise_signals(exc)
        return Decision.HALT
    pipeline = ctx._pipeline
    try:
        verdict = Decision.RETRY if pipeline is None else pipeline.on_error(tool_ctx(ctx, node_id, opts), exc)
        if ctx._breaker is not None:
            ctx._breaker.record_failure(error=exc)
    except BaseException:
        hook_failed(ctx, node_id, opts)
        raise
    if verdict == Decision.HALT:
        ctx._mirror_pipeline()
        halt_admitted(ctx, node_id, opts, "pipeline_halt")
        reraise_signals(exc)
        return Decision.HALT
    retries = ctx._core.fail(
        node_id, opts.operation_name != "", opts.cost_estimate_hint, True, _ERROR, type(exc).__name__
    )
    if retries >= ctx._config.max_retries_total:
        # seed 003 §6 provider_error: a failure that drains the retry budget stops the chain
        # now (the core has halted the node with this reason).
        detail = f"{type(exc).__name__} exhausted the retry budget of {ctx._config.max_retries_total}"
        ctx._forced_stop("provider_error", detail, error_class=type(exc).__name__)
        ctx._note.reason = "provider_error"
        reraise_signals(exc)
        return Decision.HALT
    reraise_signals(exc)
    ctx._note.reason = "retry"
    return Decision.RETRY


def reraise_signals(exc: BaseException) -> None:
    # Ctrl-C and interpreter exit belong to the process, not to the chain's retry logic.
    if isinstance(exc, KeyboardInterrupt | SystemExit):
        raise exc


def count_decision(ctx: ExecutionContext, decision: str) -> None:
    if ctx._metrics is not None:
        ctx._metrics.record_decision(ctx._metadata.chain_id, decision)
