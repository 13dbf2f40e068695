"""ShieldPipeline: asks the registered hook at each boundary and logs every non-ALLOW answer."""

from __future__ import annotations

import logging
import threading
from typing import Final

from chainwarden.errors import InvalidArgumentType
from chainwarden.shield.event import SafetyEvent
from chainwarden.shield.hooks import (
    BudgetBoundaryHook,
    EgressBoundaryHook,
    PreDispatchHook,
    RetryBoundaryHook,
    ToolDispatchHook,
)
from chainwarden.shield.types import Decision, ToolCallContext

__all__ = ["ShieldPipeline"]

# Event types of well-known hooks; any other hook is named after its class.
_EVENT_TYPES: Final[dict[str, str]] = {
    "BudgetWindowHook": "BUDGET_WINDOW_EXCEEDED",
    "BudgetBoundaryHook": "BUDGET_EXCEEDED",
    "EgressBoundaryHook": "EGRESS_BLOCKED",
    "RetryBoundaryHook": "RETRY_BLOCKED",
    "ToolDispatchHook": "TOOL_DISPATCH_BLOCKED",
    "SafeModeHook": "SAFE_MODE",
    "TokenBudgetHook": "TOKEN_BUDGET_EXCEEDED",
}

# A pipeline shared by a long-lived service must not grow without bound.
MAX_EVENTS: Final = 1000

_log = logging.getLogger("chainwarden.shield")

# Each boundary argument and the method the pipeline calls on it.
_HOOK_METHODS: Final = (
    ("pre_dispatch", "before_llm_call"),
    ("egress", "before_egress"),
    ("retry", "on_error"),
    ("budget", "before_charge"),
    ("tool_dispatch", "before_tool_call"),
)


def _as_decision(value: object) -> Decision:
    # Hooks written against another shield implementation return its own enum; same values.
    return value if isinstance(value, Decision) else Decision(str(getattr(value, "value", value)))


def _describe(exc: BaseException) -> str:
    try:
        return f"{type(exc).__name__}: {str(exc)[:200]}"
    except Exception:  # an exception whose __str__ fails must not escape the fail-closed path
        return type(exc).__name__


class ShieldPipeline:
    """Per-call policy evaluation. One optional hook per boundary.

    Errors with no retry hook registered resolve to ``on_error_policy`` (HALT unless told otherwise):
    a pipeline that cannot judge an error fails closed.
    """

    def __init__(  # noqa: PLR0917  (positional order of the reference API)
        self,
        pre_dispatch: PreDispatchHook | None = None,
        egress: EgressBoundaryHook | None = None,
        retry: RetryBoundaryHook | None = None,
        budget: BudgetBoundaryHook | None = None,
        tool_dispatch: ToolDispatchHook | None = None,
        on_error_policy: Decision | None = None,
    ) -> None:
        if on_error_policy is not None and not isinstance(on_error_policy, Decision):
            raise InvalidArgumentType(
                f"on_error_policy must be a Decision, got {type(on_error_policy).__name__}",
                argument="on_error_policy",
            )
        hooks = (pre_dispatch, egress, retry, budget, tool_dispatch)
        for hook, (arg, method) in zip(hooks, _HOOK_METHODS, strict=True):
            if hook is not None and not callable(getattr(hook, method, None)):
                raise InvalidArgumentType(
                    f"{arg} must provide a callable {method}(), got {type(hook).__name__}", argument=arg
                )
        self._pre_dispatch = pre_dispatch
        self._egress = egress
        self._retry = retry
        self._budget = budget
        self._tool_dispatch = tool_dispatch
        self._on_error_policy = on_error_policy if on_error_policy is not None else Decision.HALT
        self._events: list[SafetyEvent] = []
        self._lock = threading.Lock()

    def get_events(self) -> list[SafetyEvent]:
        with self._lock:
            return list(self._events)

    def clear_events(self) -> None:
        with self._lock:
            self._events.clear()

    def _record(self, event_type: str, hook: str, decision: Decision, reason: str, request_id: str) -> None:
        event = SafetyEvent(
            event_type=event_type, decision=decision, reason=reason, hook=hook, request_id=request_id
        )
        with self._lock:
            if len(self._events) < MAX_EVENTS:
                self._events.append(event)

    def _consult(
        self, hook: object, method: str, args: tuple[object, ...], what: str, request_id: str
    ) -> Decision:
        """The hook's answer as a Decision (None means ALLOW). A hook that raises, or answers
        something that is not a decision, is logged and fails closed: HALT, recorded as a
        ``HOOK_ERROR`` event. A broken policy must neither stop the caller nor let the call
        through (docs/design.md §22)."""
        try:
            raw = getattr(hook, method)(*args)
            if raw is None:
                return Decision.ALLOW
            decision = _as_decision(raw)
        except Exception as exc:
            name = type(hook).__name__
            _log.warning("shield hook %s.%s raised %r", name, method, exc, exc_info=True)
            reason = f"{method} raised {_describe(exc)}"
            self._record("HOOK_ERROR", name, Decision.HALT, reason, request_id)
            return Decision.HALT
        if decision is not Decision.ALLOW:
            name = type(hook).__name__
            event_type = _EVENT_TYPES.get(name, name.upper())
            self._record(event_type, name, decision, f"{what} returned {decision.value}", request_id)
        return decision

    def before_llm_call(self, ctx: ToolCallContext) -> Decision:
        hook = self._pre_dispatch
        if hook is None:
            return Decision.ALLOW
        return self._consult(hook, "before_llm_call", (ctx,), "before_llm_call", ctx.request_id)

    def before_tool_call(self, ctx: ToolCallContext) -> Decision:
        hook = self._tool_dispatch
        if hook is None:
            return Decision.ALLOW
        return self._consult(hook, "before_tool_call", (ctx,), "before_tool_call", ctx.request_id)

    def before_egress(self, ctx: ToolCallContext, url: str, method: str) -> Decision:
        hook = self._egress
        if hook is None:
            return Decision.ALLOW
        what = f"before_egress {method} {url}"
        return self._consult(hook, "before_egress", (ctx, url, method), what, ctx.request_id)

    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision:
        hook = self._budget
        if hook is None:
            return Decision.ALLOW
        what = f"before_charge ${cost_usd:.4f}"
        return self._consult(hook, "before_charge", (ctx, cost_usd), what, ctx.request_id)

    def on_error(self, ctx: ToolCallContext, err: BaseException) -> Decision:
        hook = self._retry
        if hook is not None:
            what = f"on_error {type(err).__name__}"
            return self._consult(hook, "on_error", (ctx, err), what, ctx.request_id)
        policy = self._on_error_policy
        if policy is not Decision.ALLOW:
            reason = f"no retry hook; on_error_policy {policy.value} for {type(err).__name__}"
            self._record("RETRY_POLICY_APPLIED", "ShieldPipeline", policy, reason, ctx.request_id)
        return policy
