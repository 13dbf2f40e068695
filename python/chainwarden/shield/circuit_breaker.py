"""CircuitBreaker: stop calling a failing provider, then probe it with one request."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from enum import Enum
from typing import Any

from chainwarden._args import finite_non_negative, strict_int
from chainwarden.errors import InvalidArgumentType, InvalidState
from chainwarden.shield.policy import PolicyContext, PolicyDecision

__all__ = ["CircuitBreaker", "CircuitState", "FailurePredicate"]

FailurePredicate = Callable[[BaseException], bool]

_log = logging.getLogger("chainwarden.shield")


class CircuitState(Enum):
    CLOSED = "CLOSED"
    OPEN = "OPEN"
    HALF_OPEN = "HALF_OPEN"


class CircuitBreaker:
    """CLOSED until ``failure_threshold`` consecutive failures, then OPEN (every check denied).

    After ``recovery_timeout`` seconds OPEN becomes HALF_OPEN, which admits exactly one probe:
    its success closes the circuit, its failure reopens it. ``failure_predicate`` may declare an
    exception not the provider's fault (it then does not count). Thread-safe.
    """

    policy_type = "circuit_breaker"

    def __init__(
        self,
        failure_threshold: int = 5,
        recovery_timeout: float = 60.0,
        failure_predicate: FailurePredicate | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        strict_int(failure_threshold, "failure_threshold", minimum=1)
        recovery = finite_non_negative(recovery_timeout, "recovery_timeout")
        if failure_predicate is not None and not callable(failure_predicate):
            raise InvalidArgumentType(
                f"failure_predicate must be callable or None, got {type(failure_predicate).__name__}",
                argument="failure_predicate",
            )
        if not callable(clock):
            raise InvalidArgumentType(f"clock must be callable, got {type(clock).__name__}", argument="clock")
        self.failure_threshold = failure_threshold
        self.recovery_timeout = recovery
        self.failure_predicate = failure_predicate
        self._clock = clock
        self._lock = threading.Lock()
        self._state = CircuitState.CLOSED
        self._failures = 0
        self._successes = 0
        self._last_failure: float | None = None
        self._probe_in_flight = False
        self._owner: str | None = None

    def bind_to_context(self, chain_id: str) -> None:
        """Claim the breaker for one chain: failure counts shared by two chains would be meaningless."""
        with self._lock:
            if self._owner is None:
                self._owner = chain_id
            elif self._owner != chain_id:
                raise InvalidState("CircuitBreaker is already bound to another ExecutionContext")

    def _refresh(self) -> None:
        if (
            self._state is CircuitState.OPEN
            and self._last_failure is not None
            and self._clock() - self._last_failure >= self.recovery_timeout
        ):
            self._state = CircuitState.HALF_OPEN
            self._probe_in_flight = False

    @property
    def state(self) -> CircuitState:
        with self._lock:
            self._refresh()
            return self._state

    @property
    def failure_count(self) -> int:
        with self._lock:
            return self._failures

    @property
    def success_count(self) -> int:
        with self._lock:
            return self._successes

    def check(self, context: PolicyContext | None = None) -> PolicyDecision:
        with self._lock:
            self._refresh()
            if self._state is CircuitState.OPEN:
                reason = f"circuit OPEN after {self._failures} consecutive failures"
                return PolicyDecision(allowed=False, policy_type=self.policy_type, reason=reason)
            if self._state is CircuitState.HALF_OPEN:
                if self._probe_in_flight:
                    reason = "circuit HALF_OPEN: probe already in flight"
                    return PolicyDecision(allowed=False, policy_type=self.policy_type, reason=reason)
                self._probe_in_flight = True
        return PolicyDecision(allowed=True, policy_type=self.policy_type)

    def record_success(self) -> None:
        with self._lock:
            if self._state is CircuitState.OPEN:
                return  # a late success from before the trip proves nothing about recovery
            self._successes += 1
            self._failures = 0
            self._probe_in_flight = False
            self._state = CircuitState.CLOSED

    def record_failure(self, *, error: BaseException | None = None) -> bool:
        """Count a failure; returns False when ``failure_predicate`` excused it."""
        predicate = self.failure_predicate
        if error is not None and predicate is not None:
            try:
                counts = bool(predicate(error))
            except Exception as exc:
                # A broken predicate must not hide provider failures (docs/design.md §22).
                _log.warning("CircuitBreaker failure_predicate %r raised %r", predicate, exc, exc_info=True)
                counts = True
            if not counts:
                with self._lock:
                    self._probe_in_flight = False
                return False
        with self._lock:
            self._failures += 1
            self._last_failure = self._clock()
            self._probe_in_flight = False
            if self._state is CircuitState.HALF_OPEN or self._failures >= self.failure_threshold:
                self._state = CircuitState.OPEN
        return True

    def reset(self) -> None:
        with self._lock:
            self._state = CircuitState.CLOSED
            self._failures = 0
            self._successes = 0
            self._last_failure = None
            self._probe_in_flight = False

    def to_dict(self) -> dict[str, Any]:
        with self._lock:
            return {
                "state": self._state.value,
                "failure_count": self._failures,
                "failure_threshold": self.failure_threshold,
                "recovery_timeout": self.recovery_timeout,
                "last_failure_time": self._last_failure,
                "success_count": self._successes,
            }
