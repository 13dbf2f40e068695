"""Both shared-budget backends on real servers: veronica-core's protocol, settle, expiry, argument checks."""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from budget_servers import fresh_key, make_backend
from veronica_core.distributed import LocalBudgetBackend

from chainwarden.containment import (
    BudgetBackend,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
    report_cost,
)
from chainwarden.containment.budget import SettlingBudgetBackend
from chainwarden.shield.types import Decision


def ctx_on(backend: Any, ceiling: float = 1.0) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(ceiling, 1000, 10, budget_backend=backend))


def test_reserve_commit_rollback_follow_veronicas_protocol(backend: Any) -> None:
    assert isinstance(backend, SettlingBudgetBackend)
    assert backend.get() == 0.0
    rid = backend.reserve(0.4, 1.0)
    assert backend.get_reserved() == pytest.approx(0.4)
    with pytest.raises(OverflowError, match="ceiling"):
        backend.reserve(0.7, 1.0)
    second = backend.reserve(0.6, 1.0)  # exactly at the ceiling is allowed
    assert backend.commit(rid) == pytest.approx(0.4)
    backend.rollback(second)
    assert backend.get_reserved() == 0.0
    with pytest.raises(KeyError):
        backend.commit(rid)
    with pytest.raises(KeyError):
        backend.rollback(second)
    assert backend.add(0.1) == pytest.approx(0.5)
    backend.reset()
    assert (backend.get(), backend.get_reserved()) == (0.0, 0.0)


def test_settle_charges_the_actual_cost_higher_or_lower(backend: Any) -> None:
    high = backend.reserve(0.10, 1.0)
    assert backend.settle(high, 0.25) == pytest.approx(0.25)
    low = backend.reserve(0.10, 1.0)
    assert backend.settle(low, 0.03) == pytest.approx(0.28)
    assert backend.get_reserved() == 0.0


def test_a_chain_settles_its_actual_cost_in_the_backend(backend: Any) -> None:
    ctx = ctx_on(backend)
    assert ctx.wrap_llm_call(lambda: report_cost(0.25), WrapOptions("high", 0.10)) is Decision.ALLOW
    assert backend.get() == pytest.approx(0.25)
    assert ctx.wrap_llm_call(lambda: report_cost(0.03), WrapOptions("low", 0.10)) is Decision.ALLOW
    assert ctx.wrap_llm_call(lambda: None, WrapOptions("estimate", 0.02)) is Decision.ALLOW
    assert backend.get() == pytest.approx(0.30)
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.30)

    def boom() -> None:
        raise RuntimeError("provider down")

    assert ctx.wrap_llm_call(boom, WrapOptions("fails", 0.5)) is Decision.RETRY
    assert (backend.get(), backend.get_reserved()) == (pytest.approx(0.30), 0.0)


def test_the_shared_ceiling_refuses_what_the_local_one_would_allow(backend: Any) -> None:
    backend.add(0.95)  # another process spent it
    ctx = ctx_on(backend)
    ran: list[int] = []
    decision = ctx.wrap_llm_call(lambda: ran.append(1), WrapOptions("call", 0.10))
    assert decision is Decision.HALT
    assert ctx.last_stop_reason == "budget_exceeded"
    assert ran == []
    snap = ctx.get_snapshot()
    assert snap.cost_usd_accumulated == 0.0
    assert [e.event_type for e in snap.events] == ["budget_exceeded"]
    assert "shared budget" in snap.events[0].reason
    assert backend.get() == pytest.approx(0.95)
    assert backend.get_reserved() == 0.0
    # A free call still runs while budget remains, and is refused once none does.
    assert ctx.wrap_tool_call(lambda: None) is Decision.ALLOW
    backend.add(0.05)
    assert ctx.wrap_tool_call(lambda: None) is Decision.HALT


def test_a_child_chain_spends_from_the_shared_budget(backend: Any) -> None:
    ctx = ctx_on(backend)
    child = ctx.spawn_child(max_cost_usd=0.5)
    assert child.wrap_llm_call(lambda: report_cost(0.2), WrapOptions("child", 0.1)) is Decision.ALLOW
    assert backend.get() == pytest.approx(0.2)
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.2)


def test_an_unsettled_reservation_expires(backend_spec: tuple[str, str]) -> None:
    backend = make_backend(*backend_spec, fresh_key(), reservation_ttl_s=0.3)
    try:
        backend.reserve(0.9, 1.0)
        with pytest.raises(OverflowError):
            backend.reserve(0.5, 1.0)
        deadline = time.monotonic() + 4.0
        while backend.get_reserved() > 0.0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert backend.get_reserved() == 0.0
        backend.reserve(0.5, 1.0)
    finally:
        backend.reset()
        backend.close()


BAD_CALLS = [
    ("reserve", (-1.0, 1.0), ValueError, "amount"),
    ("reserve", (math.nan, 1.0), ValueError, "amount"),
    ("reserve", ("0.1", 1.0), TypeError, "amount"),
    ("reserve", (0.1, math.inf), ValueError, "ceiling"),
    ("add", (True,), TypeError, "amount"),
    ("settle", ("", 0.1), ValueError, "reservation_id"),
    ("settle", (7, 0.1), TypeError, "reservation_id"),
    ("commit", (None,), TypeError, "reservation_id"),
]


@pytest.mark.parametrize(("method", "args", "error", "name"), BAD_CALLS)
def test_bad_arguments_are_typed_errors_and_change_nothing(
    backend: Any, method: str, args: tuple[object, ...], error: type[Exception], name: str
) -> None:
    rid = backend.reserve(0.2, 1.0)
    backend.add(0.1)
    with pytest.raises(error, match=name):
        getattr(backend, method)(*args)
    if method == "settle":
        with pytest.raises(ValueError, match="actual_usd"):
            backend.settle(rid, -0.5)
    assert (backend.get(), backend.get_reserved()) == (pytest.approx(0.1), pytest.approx(0.2))


@pytest.mark.parametrize("kind", ["redis", "postgres"])
@pytest.mark.parametrize(
    ("kwargs", "error", "name"),
    [
        ({"key": ""}, ValueError, "key"),
        ({"key": 5}, TypeError, "key"),
        ({"key": "k", "reservation_ttl_s": 0}, ValueError, "reservation_ttl_s"),
        ({"key": "k", "reservation_ttl_s": math.inf}, ValueError, "reservation_ttl_s"),
        ({"key": "k", "timeout_s": -1}, ValueError, "timeout_s"),
    ],
)
def test_bad_constructor_arguments_are_named(
    kind: str, kwargs: dict[str, Any], error: type[Exception], name: str
) -> None:
    url = "redis://127.0.0.1:1/0" if kind == "redis" else "host=/nonexistent"
    with pytest.raises(error, match=name):
        make_backend(kind, url, **kwargs)


def test_a_url_that_is_not_one_is_named() -> None:
    with pytest.raises(ValueError, match="url"):
        make_backend("redis", "http://example.invalid", "k")
    with pytest.raises(TypeError, match="url"):
        make_backend("redis", b"redis://x", "k")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="dsn"):
        make_backend("postgres", "host=x port", "k")


def test_execution_config_names_a_bad_backend() -> None:
    with pytest.raises(
        TypeError, match=r"budget_backend must provide at least add\(\) and get\(\).*lacks add, get"
    ):
        ExecutionConfig(1.0, 10, 1, budget_backend=object())
    with pytest.raises(TypeError, match="budget_backend_fail_open"):
        ExecutionConfig(1.0, 10, 1, budget_backend=LocalBudgetBackend(), budget_backend_fail_open=1)  # type: ignore[arg-type]


def test_veronicas_own_local_backend_works_through_the_protocol() -> None:
    backend = LocalBudgetBackend()
    assert isinstance(backend, BudgetBackend)
    ctx = ctx_on(backend)
    assert ctx.wrap_llm_call(lambda: report_cost(0.25), WrapOptions("high", 0.10)) is Decision.ALLOW
    assert ctx.wrap_llm_call(lambda: report_cost(0.03), WrapOptions("low", 0.10)) is Decision.ALLOW
    assert backend.get() == pytest.approx(0.28)
    backend.add(0.70)
    assert ctx.wrap_llm_call(lambda: None, WrapOptions("over", 0.05)) is Decision.HALT
    assert ctx.last_stop_reason == "budget_exceeded"
    assert (backend.get(), backend.get_reserved()) == (pytest.approx(0.98), 0.0)


async def test_async_wraps_and_blocks_hold_and_settle_too(backend: Any) -> None:
    ctx = ctx_on(backend)

    async def call() -> str:
        assert backend.get_reserved() == pytest.approx(0.1)  # held while it runs
        report_cost(0.15)
        return "ok"

    assert await ctx.wrap_llm_call_async(call, WrapOptions("async", 0.1)) is Decision.ALLOW
    with ctx.llm_call("block", cost=0.05):
        report_cost(0.02)
    assert (backend.get(), backend.get_reserved()) == (pytest.approx(0.17), 0.0)
    backend.add(0.83)
    ran: list[int] = []

    async def refused() -> None:
        ran.append(1)

    assert await ctx.wrap_llm_call_async(refused, WrapOptions("over", 0.1)) is Decision.HALT
    assert ctx.last_stop_reason == "budget_exceeded"
    assert ran == []
