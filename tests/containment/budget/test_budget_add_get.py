"""Budget backends with only ``add`` and ``get`` (the reference accepts them): holds are kept in this process
(exact for its threads and contexts), the actual cost is added when a call ends, an unreachable backend
fails closed; ``ExecutionConfig(redis_url=...)`` builds a Redis backend per chain id (docs/containment.md,
"Shared budgets")."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from budget_servers import RedisServer

from chainwarden.containment import (
    ChainMetadata,
    ExecutionConfig,
    ExecutionContext,
    RedisBudgetBackend,
    WrapOptions,
    report_cost,
)
from chainwarden.shield.types import Decision


class Counter:
    """The least a backend may be: a running total (add / get), optionally slow."""

    def __init__(self, spent: float = 0.0, delay_s: float = 0.0) -> None:
        self.spent = spent
        self.delay_s = delay_s
        self.lock = threading.Lock()
        self.adds: list[float] = []

    def add(self, amount: float) -> float:
        with self.lock:
            self.spent += amount
            self.adds.append(amount)
            return self.spent

    def get(self) -> float:
        time.sleep(self.delay_s)
        with self.lock:
            return self.spent


def ctx_on(backend: Any, ceiling: float = 1.0) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(ceiling, 1000, 10, budget_backend=backend))


def test_an_add_get_backend_is_charged_actual_costs_and_refuses_past_its_ceiling() -> None:
    counter = Counter(spent=0.5)  # spent by other processes already
    ctx = ctx_on(counter)
    assert ctx.wrap_llm_call(lambda: report_cost(0.3), WrapOptions("a", 0.1)) is Decision.ALLOW
    assert counter.adds == [0.3]
    assert ctx.wrap_llm_call(lambda: None, WrapOptions("b", 0.3)) is Decision.HALT  # 0.8 + 0.3 > 1.0
    assert ctx.last_stop_reason == "budget_exceeded"

    def fails() -> None:
        raise TimeoutError("provider")

    assert ctx.wrap_llm_call(fails, WrapOptions("c", 0.1)) is Decision.RETRY
    assert counter.adds == [0.3]  # a failed call adds nothing
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.3)  # local spend only


def test_holds_in_this_process_keep_concurrent_calls_under_the_ceiling() -> None:
    counter = Counter(delay_s=0.002)
    contexts = [ctx_on(counter), ctx_on(counter)]  # two chains of one process share the holds
    running = 0
    peak = 0
    gate = threading.Lock()
    barrier = threading.Barrier(8)

    def call() -> None:
        nonlocal running, peak
        with gate:
            running += 1
            peak = max(peak, running)
        time.sleep(0.02)
        with gate:
            running -= 1

    decisions: list[Decision] = []

    def worker(i: int) -> None:
        barrier.wait()
        decisions.append(contexts[i % 2].wrap_llm_call(call, WrapOptions("x", 0.3)))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert decisions.count(Decision.ALLOW) == 3
    assert counter.spent == pytest.approx(0.9)
    assert peak <= 3


def test_an_unreachable_add_get_backend_fails_closed_and_adds_are_logged() -> None:
    class Down(Counter):
        def get(self) -> float:
            raise ConnectionError("redis down")

    ctx = ctx_on(Down())
    called = []
    assert ctx.wrap_llm_call(lambda: called.append(1)) is Decision.HALT
    assert (called, ctx.last_stop_reason) == ([], "budget_backend_unavailable")

    class AddFails(Counter):
        def add(self, amount: float) -> float:
            raise ConnectionError("lost on add")

    ctx = ctx_on(AddFails())
    assert ctx.wrap_llm_call(lambda: report_cost(0.2)) is Decision.ALLOW  # the call ran: it stays ALLOW
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.2)


@pytest.mark.parametrize(
    ("backend", "match"),
    [
        (type("OnlyAdd", (), {"add": lambda self, a: a})(), "lacks get"),
        (object(), "lacks add, get"),
        (
            type("Half", (Counter,), {"reserve": lambda self, a, c: "id", "commit": lambda self, r: 0.0})(),
            "lacks rollback",
        ),
    ],
)
def test_a_backend_without_add_and_get_or_with_half_the_reservation_methods_is_refused(
    backend: Any, match: str
) -> None:
    with pytest.raises(TypeError, match=match):
        ExecutionConfig(1.0, 10, 1, budget_backend=backend)


def test_redis_url_builds_a_backend_per_chain_id_and_closes_it(redis_server: RedisServer) -> None:
    config = ExecutionConfig(1.0, 10, 1, redis_url=redis_server.url)
    first = ExecutionContext(config, metadata=ChainMetadata(request_id="r1", chain_id="chain-A"))
    again = ExecutionContext(config, metadata=ChainMetadata(request_id="r2", chain_id="chain-A"))
    other = ExecutionContext(config, metadata=ChainMetadata(request_id="r3", chain_id="chain-B"))
    probe = RedisBudgetBackend(redis_server.url, key="chain-A")
    try:
        assert first.wrap_llm_call(lambda: report_cost(0.7)) is Decision.ALLOW
        assert probe.get() == pytest.approx(0.7)
        # The same chain id shares the budget; another chain id has its own.
        assert again.wrap_llm_call(lambda: None, WrapOptions("more", 0.4)) is Decision.HALT
        assert other.wrap_llm_call(lambda: None, WrapOptions("more", 0.4)) is Decision.ALLOW
        first.close()  # closes the backend it built; the budget itself stays
        assert probe.get() == pytest.approx(0.7)
    finally:
        probe.reset()
        probe.close()
        again.close()
        other.close()


def test_redis_url_is_checked_and_never_shown() -> None:
    url = "redis://:hunter2@127.0.0.1:6399/0"
    config = ExecutionConfig(1.0, 10, 1, redis_url=url)
    assert "hunter2" not in repr(config)
    with pytest.raises(ValueError, match="not both"):
        ExecutionConfig(1.0, 10, 1, budget_backend=Counter(), redis_url=url)
    with pytest.raises(TypeError, match="redis_url must be a str"):
        ExecutionConfig(1.0, 10, 1, redis_url=b"redis://x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="redis_url must not be empty"):
        ExecutionConfig(1.0, 10, 1, redis_url="")
