"""How the in-process executor reaches `chainwarden.containment.ExecutionContext`.

The executor needs `ExecutionConfig`, `ExecutionContext` (`wrap_llm_call(fn, options=...) -> Decision`,
`close()`) and `WrapOptions` from one containment implementation. `Containment` bundles them; by default
they come from `chainwarden.containment`, imported when a run needs them so that `chainwarden.runtime`
itself imports without it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol

from chainwarden._contexts import CallGuard


def current_credits() -> Any:
    """The credit holds of the run whose task this is (`runtime.credits.CURRENT`), or None."""
    from chainwarden.runtime.credits import CURRENT  # noqa: PLC0415 - credits imports this module's users

    return CURRENT.get()


class LlmCallGuard(CallGuard, Protocol):
    """The part of ExecutionContext the executor uses: the wraps every context has, and `close`."""

    def close(self) -> None: ...


@dataclass(frozen=True)
class RunLimits:
    """Per-run containment limits, passed to ExecutionConfig. `max_cost_usd` counts the cost each
    LLM call reports (`LlmResult.cost_usd`, what the ledger bills), else its estimate."""

    max_cost_usd: float = 10.0
    max_steps: int = 100
    max_retries_total: int = 10
    timeout_ms: int = 0


class Containment:
    """One containment implementation: a module (or namespace) exporting the three names above."""

    def __init__(self, module: Any = None) -> None:
        self._module = module

    def _resolve(self) -> Any:
        if self._module is None:
            self._module = importlib.import_module("chainwarden.containment")
        return self._module

    def new_context(self, limits: RunLimits, metadata: Mapping[str, Any] | None = None) -> LlmCallGuard:
        """A context for one run; ``metadata`` (the fields of ``ChainMetadata``: the run's ids and context)
        is given to chainwarden's containment, which keeps it on the run's graph."""
        module = self._resolve()
        options: dict[str, Any] = {}
        # The run's credit holds (docs/runtime.md "Credits"), when the runtime has a credit policy: every call
        # of the context holds its estimate against the account before it is sent.
        credits = current_credits()
        if credits is not None:
            options["budget_backend"] = credits
        config = module.ExecutionConfig(
            max_cost_usd=limits.max_cost_usd,
            max_steps=limits.max_steps,
            max_retries_total=limits.max_retries_total,
            timeout_ms=limits.timeout_ms,
            **options,
        )
        if metadata is None or not getattr(module, "__name__", "").startswith("chainwarden"):
            guard: LlmCallGuard = module.ExecutionContext(config=config)
        else:  # another containment may not know session_id or attributes
            guard = module.ExecutionContext(config=config, metadata=module.ChainMetadata(**metadata))
        return guard

    def report_cost(self, cost_usd: float | Decimal | None) -> None:
        """Inside a wrapped call: charges it what the ledger will bill for it (docs/design.md §20),
        so `RunLimits.max_cost_usd` counts real cost, not estimates. A containment without
        `report_cost` (the reference) keeps counting estimates."""
        if cost_usd is None:
            return
        report = getattr(self._resolve(), "report_cost", None)
        if report is not None:
            report(cost_usd)

    def flag_call(self, key: str) -> None:
        """Inside a wrapped call: sets ``metadata[key] = True`` on its node (chainwarden's containment
        only; a containment without node metadata, the reference, keeps what it has)."""
        if self._resolve() is sys.modules.get("chainwarden.containment"):
            from chainwarden.containment.calls import flag_current_call  # noqa: PLC0415

            flag_current_call(key)

    def wrap_options(self, operation_name: str, cost_estimate_hint: float) -> Any:
        return self._resolve().WrapOptions(
            operation_name=operation_name, cost_estimate_hint=cost_estimate_hint
        )


def refusal_is_timeout(guard: LlmCallGuard) -> bool:
    """True when the context says the refused call ran out of time (chain or per-call timeout)."""
    reason = getattr(guard, "last_stop_reason", None)
    if reason is not None:
        return "timeout" in str(reason).lower()
    # A context without `last_stop_reason` (the reference one): its latest safety event tells.
    snapshot_of = getattr(guard, "get_snapshot", None)
    if snapshot_of is None:
        return False
    try:
        events = tuple(snapshot_of().events)
    except Exception:
        # The snapshot only refines the error code; a failure here must not hide the refusal itself.
        return False
    return bool(events) and "TIMEOUT" in str(getattr(events[-1], "event_type", "")).upper()


def stop_reason_of(guard: LlmCallGuard) -> str | None:
    """The context's reason for its last refusal (`budget_exceeded`, `insufficient_credits`, ...), when it
    keeps one (chainwarden's and the reference's `last_stop_reason`)."""
    reason = getattr(guard, "last_stop_reason", None)
    return reason if isinstance(reason, str) and reason else None
