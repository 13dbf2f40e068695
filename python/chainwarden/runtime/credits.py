"""Credits as a budget (docs/runtime.md "Credits"): `AiRuntime(credit_policy=CreditPolicy(...))`.

- **Admission.** Before its executor starts, a run whose account has at most `min_balance_credits` available
  (its balance less the credits held for calls in flight, in any process) ends with
  `Error("insufficient_credits")` and `Done`; nothing runs, nothing is billed.
- **Holds** (`hold_estimates=True`). Each contained call of the run holds its estimate — priced as the
  ledger will charge it — against the account in the ledger's database before it is sent
  (`chainwarden.billing.holds`); a call that does not fit is refused with stop reason `insufficient_credits`
  and the run ends with that error. The call's actual charge replaces its hold. Overspend is bounded as for a
  chain's cost ceiling (docs/design.md §20): by what the calls in flight cost beyond their estimates.

The holds reach every executor built on chainwarden's containment through the run's `ExecutionContext`: the
runtime sets the run's `RunCredits` for the run's tasks (a context variable), and
`runtime.containment_port.Containment.new_context` gives it to the context as its shared budget backend
(docs/containment.md "Shared budgets"), the seam every such executor already goes through.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import threading
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

from chainwarden.billing import Pricing
from chainwarden.billing.holds import CreditHolds
from chainwarden.billing.pricing import MAX_CREDITS
from chainwarden.errors import ChainwardenError, InvalidArgument, InvalidArgumentType
from chainwarden.runtime.events import AiEvent, Done, Error, ErrorCode
from chainwarden.runtime.once import Once
from chainwarden.runtime.port import GraphExecutor, GraphFinal, GraphRunRequest, GraphRunResult, Usage

__all__ = ["INSUFFICIENT_CREDITS", "CreditPolicy", "InsufficientCredits", "RunCredits"]

logger = logging.getLogger("chainwarden.runtime")

#: The stop reason of a call refused for want of credits, and the run's Error code.
INSUFFICIENT_CREDITS: Final[ErrorCode] = "insufficient_credits"


@dataclass(frozen=True)
class CreditPolicy:
    """Refuse runs at or below `min_balance_credits` (negative: an overdraft allowed down to it); with
    `hold_estimates`, hold each call's estimate against the balance before it is sent."""

    min_balance_credits: int = 0
    hold_estimates: bool = True

    def __post_init__(self) -> None:
        value = self.min_balance_credits
        if isinstance(value, bool) or not isinstance(value, int):
            raise InvalidArgumentType(
                f"min_balance_credits must be an int, got {type(value).__name__}",
                argument="min_balance_credits",
            )
        if abs(value) > MAX_CREDITS:
            raise InvalidArgument(
                f"min_balance_credits must fit a ledger column, got {value}", argument="min_balance_credits"
            )
        if not isinstance(self.hold_estimates, bool):
            raise InvalidArgumentType(
                f"hold_estimates must be a bool, got {type(self.hold_estimates).__name__}",
                argument="hold_estimates",
            )


class InsufficientCredits(ChainwardenError, OverflowError):
    """A call's estimate does not fit the account's available credits (the containment gate refuses the call
    with this `stop_reason`)."""

    stop_reason = INSUFFICIENT_CREDITS


#: The credits of the run whose tasks are running (set by the runtime for the run's pump task).
CURRENT: contextvars.ContextVar[RunCredits | None] = contextvars.ContextVar(
    "chainwarden_run_credits", default=None
)


class RunCredits:
    """One run's holds, as the budget backend of its `ExecutionContext` (the shared-budget protocol of
    docs/containment.md; amounts in USD, held in credits as the ledger will charge them)."""

    def __init__(
        self,
        holds: CreditHolds,
        policy: CreditPolicy,
        pricing: Pricing,
        req: GraphRunRequest,
        *,
        owner: str,
        ttl_s: float,
    ) -> None:
        assert req.run_id is not None
        self._holds = holds
        self._policy = policy
        self._pricing = pricing
        self.run_id = req.run_id
        self.attempt = req.attempt
        self.account = req.billing_account_id
        self._owner = owner
        self._ttl_s = ttl_s
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}  # hold id -> credits held
        self.refused = 0
        self.placed = 0

    # --- admission ------------------------------------------------------------------------------------------
    def admits(self) -> bool:
        """Whether the account has more than the minimum available (a read; raises when it cannot tell)."""
        return self._holds.available(self.account) > self._policy.min_balance_credits

    # --- the budget backend protocol (called by the containment gate, in the call's thread) -----------------
    def reserve(self, amount: float, ceiling: float) -> str:
        credits = self._credits(amount)
        hold_id, available = self._holds.place(
            self.account,
            self.run_id,
            self.attempt,
            credits,
            owner=self._owner,
            ttl_s=self._ttl_s,
            min_balance=self._policy.min_balance_credits,
        )
        if hold_id is None:
            self.refused += 1
            raise InsufficientCredits(
                f"insufficient credits: the call's estimate of {credits} credits does not fit the "
                f"{available} available to account {self.account!r} (minimum "
                f"{self._policy.min_balance_credits})"
            )
        with self._lock:
            self._open[hold_id] = credits
            self.placed += 1
        return hold_id

    def settle(self, reservation_id: str, actual_usd: float) -> float:
        with self._lock:
            self._open.pop(reservation_id, None)
        self._holds.settle(reservation_id, self._credits(actual_usd))
        return 0.0

    def commit(self, reservation_id: str) -> float:
        with self._lock:
            credits = self._open.pop(reservation_id, 0)
        self._holds.settle(reservation_id, credits)
        return 0.0

    def rollback(self, reservation_id: str) -> None:
        with self._lock:
            self._open.pop(reservation_id, None)
        self._holds.release(reservation_id)

    def add(self, amount: float) -> float:
        # A call that ran without a hold (a free estimate): its charge comes through billing, as always.
        return 0.0

    def get(self) -> float:
        # What the gate compares with the chain's ceiling for a call estimated at 0: credits are not the
        # chain's dollars, so nothing is "spent" here; such a call costs nothing to hold.
        return 0.0

    def get_reserved(self) -> float:
        with self._lock:
            held = sum(self._open.values())
        return float(Decimal(held) / Decimal(10_000_000))

    def reset(self) -> None:
        """Nothing to reset: holds end with their calls."""

    def close(self) -> None:
        """The run's holds end with the run (`end`)."""

    # --- billing and the run's end -------------------------------------------------------------------------
    def charged(self, credits: list[int]) -> None:
        """Receipts of this run were committed: their holds go (in a worker thread; never raises)."""
        try:
            self._holds.release_charged(self.run_id, self.attempt, credits)
        except Exception:
            logger.warning("run %s: could not release the holds of billed calls", self.run_id, exc_info=True)

    def end(self, *, billed: bool) -> None:
        try:
            self._holds.end_run(self.run_id, self.attempt, billed=billed)
        except Exception:
            logger.warning("run %s: could not end its credit holds (they expire)", self.run_id, exc_info=True)

    def _credits(self, amount_usd: float) -> int:
        if not math.isfinite(amount_usd) or amount_usd <= 0:
            return 0
        return self._pricing.credits_for(Decimal(repr(amount_usd)))


class _AdmittedFinal:
    """The final of an admitted run: the executor's once it started, else the refusal's."""

    def __init__(self) -> None:
        self.refusal: Once[GraphFinal] = Once()
        self.inner: GraphRunResult | None = None

    def done(self) -> bool:
        inner = self.inner
        if inner is None:
            return self.refusal.done()
        done = getattr(inner.final, "done", None)
        return bool(done()) if callable(done) else False

    async def wait(self) -> GraphFinal:
        if self.inner is not None:
            return await self.inner.final
        return await self.refusal

    def __await__(self) -> Generator[Any, None, GraphFinal]:
        return self.wait().__await__()


def admitted(executor: GraphExecutor | None, req: GraphRunRequest, credits: RunCredits) -> GraphRunResult:
    """The executor's run, started only once the account has credits above the minimum; otherwise
    `Error("insufficient_credits")` and `Done` (`Error("internal")` when the balance cannot be read)."""
    final = _AdmittedFinal()
    run_id = credits.run_id

    def refuse(code: Any) -> None:
        final.refusal.set(
            GraphFinal(
                ok=False,
                run_id=run_id,
                request_id=req.ingress_request_id or run_id,
                usage=Usage(),
                finish_reason="error",
                error=code,
                stop_reason=INSUFFICIENT_CREDITS if code == INSUFFICIENT_CREDITS else None,
            )
        )

    async def stream() -> AsyncIterator[AiEvent]:
        try:
            ok = await asyncio.to_thread(credits.admits)
        except Exception:
            logger.exception("run %s: cannot read the credits of %r; refused", run_id, credits.account)
            ok = None
        if not ok or executor is None:
            code: ErrorCode = INSUFFICIENT_CREDITS if ok is False else "internal"
            if ok is False:
                logger.warning("run %s: account %r has no credits above the minimum", run_id, credits.account)
            refuse(code)
            yield Error(code)
            yield Done()
            return
        result = executor.run_graph(req)
        final.inner = result
        try:
            async for event in result.stream:
                yield event
        finally:
            close = getattr(result.stream, "aclose", None)
            if close is not None:
                await close()

    return GraphRunResult(stream=stream(), final=final)
