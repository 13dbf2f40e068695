import math
import threading

import pytest

from chainwarden.shield import CircuitBreaker, CircuitState, PolicyContext


class FakeClock:
    def __init__(self) -> None:
        self.now = 50.0

    def __call__(self) -> float:
        return self.now


def test_opens_after_threshold_and_denies() -> None:
    breaker = CircuitBreaker(failure_threshold=3, recovery_timeout=30, clock=FakeClock())
    for _ in range(2):
        breaker.record_failure()
        assert breaker.check(PolicyContext()).allowed
    breaker.record_failure()
    assert breaker.state is CircuitState.OPEN
    decision = breaker.check(PolicyContext())
    assert not decision.allowed
    assert "3 consecutive failures" in decision.reason


def test_success_resets_consecutive_failures() -> None:
    breaker = CircuitBreaker(failure_threshold=2)
    breaker.record_failure()
    breaker.record_success()
    breaker.record_failure()
    assert breaker.state is CircuitState.CLOSED
    assert breaker.failure_count == 1
    assert breaker.success_count == 1


def test_half_open_admits_one_probe_then_closes_or_reopens() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(failure_threshold=1, recovery_timeout=10, clock=clock)
    breaker.record_failure()
    clock.now += 10
    assert breaker.state is CircuitState.HALF_OPEN
    assert breaker.check().allowed
    assert not breaker.check().allowed  # the probe is in flight
    breaker.record_failure()
    assert breaker.state is CircuitState.OPEN
    clock.now += 10
    assert breaker.check().allowed
    breaker.record_success()
    assert breaker.state is CircuitState.CLOSED
    assert breaker.failure_count == 0


def test_failure_predicate_excuses_and_frees_the_probe() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(
        failure_threshold=1,
        recovery_timeout=5,
        failure_predicate=lambda e: not isinstance(e, ValueError),
        clock=clock,
    )
    assert breaker.record_failure(error=ValueError("user error")) is False
    assert breaker.state is CircuitState.CLOSED
    assert breaker.record_failure(error=OSError("provider down")) is True
    clock.now += 5
    assert breaker.check().allowed
    breaker.record_failure(error=ValueError("excused"))
    assert breaker.check().allowed  # the excused failure released the probe slot


def test_broken_predicate_counts_the_failure() -> None:
    def broken(_: BaseException) -> bool:
        raise RuntimeError("bug")

    breaker = CircuitBreaker(failure_threshold=1, failure_predicate=broken)
    assert breaker.record_failure(error=OSError()) is True
    assert breaker.state is CircuitState.OPEN


def test_binding_to_two_contexts_is_refused() -> None:
    breaker = CircuitBreaker()
    breaker.bind_to_context("a")
    breaker.bind_to_context("a")
    with pytest.raises(RuntimeError):
        breaker.bind_to_context("b")


def test_reset_and_to_dict() -> None:
    breaker = CircuitBreaker(failure_threshold=1)
    breaker.record_failure()
    assert breaker.to_dict()["state"] == "OPEN"
    breaker.reset()
    assert breaker.to_dict() == {
        "state": "CLOSED",
        "failure_count": 0,
        "failure_threshold": 1,
        "recovery_timeout": 60.0,
        "last_failure_time": None,
        "success_count": 0,
    }


def test_concurrent_failures_are_all_counted() -> None:
    breaker = CircuitBreaker(failure_threshold=10_000)

    def worker() -> None:
        for _ in range(500):
            breaker.record_failure()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert breaker.failure_count == 4000
    assert breaker.state is CircuitState.CLOSED


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"failure_threshold": 0}, ValueError),
        ({"failure_threshold": True}, TypeError),
        ({"failure_threshold": 2.0}, TypeError),
        ({"recovery_timeout": math.nan}, ValueError),
        ({"recovery_timeout": -1.0}, ValueError),
        ({"recovery_timeout": math.inf}, ValueError),
        ({"recovery_timeout": False}, TypeError),
        ({"recovery_timeout": "5"}, TypeError),
    ],
)
def test_rejects_bad_configuration(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]
