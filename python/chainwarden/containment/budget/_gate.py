"""The shared budget as an extra gate around the chain's ``ChainCore`` (docs/design.md §20).

The core keeps deciding every rule of its own chain (limits, its local reservation, what a call is
charged). When the config names a ``budget_backend``, each admitted call also holds its estimate in
the backend before it runs, and the cost the core charged is settled there afterwards; a failed or
refused call releases its hold. This module only forwards those amounts."""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Final, cast

from chainwarden._core import CallKind, CallNotAdmitted, ChainCore, ClosedCall, StopCause
from chainwarden._secrets import mask_secrets
from chainwarden.containment.budget._protocol import EPSILON, reserves
from chainwarden.errors import BudgetExceeded
from chainwarden.vocab import CallStatus

__all__ = ["BackendStop", "BudgetedCore", "SharedBudget"]

logger = logging.getLogger("chainwarden.containment")

UNAVAILABLE: Final = "budget_backend_unavailable"
EXCEEDED: Final = "budget_exceeded"


class BackendStop:
    """The cause of a ``CallNotAdmitted`` ``begin`` raises, in place of a ``StopCause``, when the backend
    refused the call."""

    __slots__ = ("detail", "reason")

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail

    def __repr__(self) -> str:
        return f"BackendStop({self.reason!r}, {self.detail!r})"


class HeldHere:
    """The estimates of this process's calls in flight on one backend without reservations."""

    __slots__ = ("__weakref__", "calls", "held", "lock")

    def __init__(self) -> None:
        self.held = 0.0
        self.calls = 0
        self.lock = threading.Lock()


# One HeldHere per backend object, shared by every context of this process that uses it (kept while a
# SharedBudget refers to it; the backend outlives it, so its id is not reused meanwhile).
_HELD: weakref.WeakValueDictionary[int, HeldHere] = weakref.WeakValueDictionary()
_HELD_LOCK = threading.Lock()


def _held_here(backend: object) -> HeldHere:
    with _HELD_LOCK:
        found = _HELD.get(id(backend))
        if found is None:
            found = _HELD[id(backend)] = HeldHere()
        return found


class SharedBudget:
    """One backend and the ceiling every chain sharing it reserves against. A child chain uses its
    parent's, so its spending counts in the shared budget too.

    A backend with only ``add`` and ``get`` holds nothing itself: the estimates of this process's calls in
    flight on it are held here (``HeldHere``), and a call is admitted while ``get() + held + estimate`` fits
    under the ceiling. Other processes do not see these holds: the weaker bound of docs/design.md §45 and
    docs/containment.md "Shared budgets"."""

    __slots__ = ("backend", "ceiling", "fail_open", "here", "reserves", "settles")

    def __init__(self, backend: Any, ceiling: float, fail_open: bool) -> None:
        self.backend = backend
        self.ceiling = ceiling
        self.fail_open = fail_open
        self.settles = callable(getattr(backend, "settle", None))
        self.reserves = reserves(backend)
        self.here = None if self.reserves else _held_here(backend)

    def hold_here(self, estimate: float) -> None:
        """Holds ``estimate`` in this process if the backend's spent total, the holds here and the
        estimate fit under the ceiling; else ``OverflowError``. Check and hold are one step for this
        process's threads."""
        here = self.here
        assert here is not None
        with here.lock:
            spent = float(self.backend.get())
            if spent + EPSILON >= self.ceiling or spent + here.held + estimate > self.ceiling + EPSILON:
                raise BudgetExceeded(
                    f"shared budget spent ${spent:.6f} with ${here.held:.6f} held in this process: "
                    f"${estimate:.6f} more would exceed the ceiling ${self.ceiling:.6f}"
                )
            here.held += estimate
            here.calls += 1

    def release_here(self, estimate: float) -> None:
        here = self.here
        assert here is not None
        with here.lock:
            here.calls -= 1
            # With nothing in flight the exact answer is 0; this also drops float residue.
            here.held = max(0.0, here.held - estimate) if here.calls else 0.0


# A node's hold: the backend's reservation id (None when the backend reserved nothing), the amount held,
# and whether it is held in this process (a backend without reservations).
_Hold = tuple[str | None, float, bool]


class BudgetedCore:
    """The chain's ``ChainCore`` with the shared-budget gate: everything not defined here is the core's."""

    __slots__ = ("_budget", "_core", "_holds", "_lock", "_on_open")

    def __init__(self, core: ChainCore, budget: SharedBudget, on_open: Callable[[str], None]) -> None:
        self._core = core
        self._budget = budget
        self._holds: dict[int, _Hold] = {}
        self._lock = threading.Lock()
        self._on_open = on_open  # reports a call let through while the backend is unreachable

    def __getattr__(self, name: str) -> Any:
        return getattr(self._core, name)

    @property
    def shared_budget(self) -> SharedBudget:
        return self._budget

    # -- admission ---------------------------------------------------------------------------

    def begin_sync(  # noqa: PLR0917  (the core's signature)
        self,
        fn: object,
        parent_hint: int | None,
        kind: CallKind,
        name: str,
        model: str | None,
        cost_estimate: float,
    ) -> int:
        node = self._core.begin_sync(fn, parent_hint, kind, name, model, cost_estimate)
        return self._held(node, name, cost_estimate)

    def begin(
        self, parent_hint: int | None, kind: CallKind, name: str, model: str | None, cost_estimate: float
    ) -> int:
        node = self._core.begin(parent_hint, kind, name, model, cost_estimate)
        return self._held(node, name, cost_estimate)

    def _held(self, node: int, name: str, cost_estimate: float) -> int:
        """``node``, admitted by the core, once the shared budget holds its estimate; else it is closed
        halted and refused as the core refuses (``CallNotAdmitted``, the ``BackendStop`` as its cause)."""
        try:
            stop = self._hold(node, cost_estimate)
        except BaseException:
            self._core.fail(node, name != "", cost_estimate, False, CallStatus.ERROR, "BudgetBackendError")
            raise
        if stop is not None:
            # Refused before it ran: the node closes halted, nothing is charged anywhere.
            self._core.fail(node, name != "", cost_estimate, False, CallStatus.HALTED, "", stop.reason)
            # A BackendStop reads as a StopCause where a refusal is reported (reason, detail).
            raise CallNotAdmitted(cast(StopCause, stop), node)
        return node

    def _hold(self, node: int, estimate: float) -> BackendStop | None:
        b = self._budget
        here = not b.reserves
        try:
            rid: str | None = None
            if here:
                b.hold_here(estimate)
            elif estimate > 0.0:
                rid = b.backend.reserve(estimate, b.ceiling)
            else:
                # veronica's backends refuse to reserve 0: a free call only needs budget left.
                spent = float(b.backend.get())
                if spent >= b.ceiling:
                    raise BudgetExceeded(f"shared budget spent ${spent:.6f} >= ceiling ${b.ceiling:.6f}")
        except OverflowError as err:
            # A backend may name its own reason (a credit hold that does not fit: `insufficient_credits`).
            reason = getattr(err, "stop_reason", EXCEEDED)
            return BackendStop(
                reason if isinstance(reason, str) and reason else EXCEEDED, mask_secrets(str(err))
            )
        except Exception as err:
            # Any backend's message may name its server: shown masked (docs/design.md §31).
            detail = f"budget backend unreachable: {type(err).__name__}: {mask_secrets(str(err))}"
            if not b.fail_open:
                logger.warning("%s; the call is refused (fail closed)", detail)
                return BackendStop(UNAVAILABLE, detail)
            logger.warning("%s; the call runs without a shared hold (budget_backend_fail_open)", detail)
            self._on_open(detail)
            rid, here = None, False
        with self._lock:
            self._holds[node] = (rid, estimate, here)
        return None

    # -- settlement --------------------------------------------------------------------------

    def settle(self, node: int, named: bool, cost_estimate: float) -> None:
        # The fast path's settle: charged what the call reported, else its estimate.
        report = self._core.take_report(node)
        if report is None:
            self.succeed(node, named, cost_estimate)
        else:
            self.succeed(node, named, cost_estimate, report.cost_usd, report.tokens_in, report.tokens_out)

    def succeed(  # noqa: PLR0917  (the core's signature)
        self,
        node: int,
        named: bool,
        cost_estimate: float,
        actual_cost: float | None = None,
        tokens_in: int | None = None,
        tokens_out: int | None = None,
    ) -> float:
        cost = self._core.succeed(node, named, cost_estimate, actual_cost, tokens_in, tokens_out)
        self._release(node, cost)
        return cost

    def fail(  # noqa: PLR0917  (the core's signature)
        self,
        node: int,
        named: bool,
        cost_estimate: float,
        retry: bool,
        status: str,
        error_class: str,
        halt_reason: str | None = None,
        error_message: str | None = None,
    ) -> ClosedCall:
        charged: float | None = None
        try:
            closed = self._core.fail(
                node, named, cost_estimate, retry, status, error_class, halt_reason, error_message
            )
            # What the call reported before it ended was spent (docs/design.md §30).
            charged = closed.charged_usd or None
            return closed
        finally:
            self._release(node, charged)

    def _release(self, node: int, cost: float | None) -> None:
        """Settles ``cost`` (None: charge nothing) against the node's hold. A backend that fails here
        cannot undo a call that already ran: logged; an unsettled hold expires on its own."""
        with self._lock:
            hold = self._holds.pop(node, None)
        if hold is None:
            return
        rid, estimate, here = hold
        if here:
            self._budget.release_here(estimate)
        backend = self._budget.backend
        try:
            if rid is None:
                if cost:
                    backend.add(cost)
            elif cost is None:
                backend.rollback(rid)
            elif self._budget.settles:
                backend.settle(rid, cost)
            else:
                self._commit(rid, estimate, cost)
        except Exception as err:
            logger.warning(
                "budget backend could not settle a call (%s: %s); $%s is missing from the shared "
                "budget and its hold expires on its own",
                type(err).__name__,
                mask_secrets(str(err)),
                "0" if cost is None else f"{cost:.6f}",
            )

    def _commit(self, rid: str, estimate: float, cost: float) -> None:
        # veronica's protocol has no settle: commit the estimate, then add the difference.
        backend = self._budget.backend
        try:
            backend.commit(rid)
        except KeyError:  # the hold expired: the call's cost was never charged
            backend.add(cost)
            return
        if cost != estimate:
            backend.add(cost - estimate)
