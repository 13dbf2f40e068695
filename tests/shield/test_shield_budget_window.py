import math
import threading

import pytest

from chainwarden.shield import BudgetWindowHook, Decision, ToolCallContext

CTX = ToolCallContext(request_id="r")


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_allows_then_degrades_then_halts() -> None:
    hook = BudgetWindowHook(max_calls=5, window_seconds=10, degrade_threshold=0.6, clock=FakeClock())
    answers = [hook.before_llm_call(CTX) for _ in range(7)]
    assert answers == [None, None, None, Decision.DEGRADE, Decision.DEGRADE, Decision.HALT, Decision.HALT]


def test_window_slides() -> None:
    clock = FakeClock()
    hook = BudgetWindowHook(max_calls=2, window_seconds=10, degrade_threshold=1.0, clock=clock)
    assert hook.before_llm_call(CTX) is None
    clock.now += 6
    assert hook.before_llm_call(CTX) is None
    assert hook.before_llm_call(CTX) is Decision.HALT
    clock.now += 5  # the first call (t=1000) has left the window; the refused one (t=1006) has not
    assert hook.count() == 2
    clock.now += 6
    assert hook.count() == 0
    assert hook.before_llm_call(CTX) is None


def test_concurrent_calls_admit_exactly_max_calls() -> None:
    hook = BudgetWindowHook(max_calls=100, window_seconds=3600, degrade_threshold=1.0)
    admitted = []
    lock = threading.Lock()

    def worker() -> None:
        mine = sum(1 for _ in range(50) if hook.before_llm_call(CTX) is None)
        with lock:
            admitted.append(mine)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sum(admitted) == 100


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"max_calls": 0}, ValueError),
        ({"max_calls": True}, TypeError),
        ({"max_calls": 2.0}, TypeError),
        ({"max_calls": 2, "window_seconds": math.nan}, ValueError),
        ({"max_calls": 2, "window_seconds": -1.0}, ValueError),
        ({"max_calls": 2, "window_seconds": 0}, ValueError),
        ({"max_calls": 2, "degrade_threshold": 0.0}, ValueError),
        ({"max_calls": 2, "degrade_threshold": 1.5}, ValueError),
        ({"max_calls": 2, "degrade_threshold": math.inf}, ValueError),
    ],
)
def test_rejects_bad_configuration(kwargs: dict[str, object], error: type[Exception]) -> None:
    with pytest.raises(error):
        BudgetWindowHook(**kwargs)  # type: ignore[arg-type]
