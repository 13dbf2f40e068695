"""A PostgreSQL budget reserve and settle are one statement and one round trip each (counted on the real
server from libpq's protocol trace, not timed), so a wrapped call costs two, like Redis."""

from __future__ import annotations

import uuid

from pg_trace import round_trips, statements, traced
from postgres_server import postgres_dsn

from chainwarden.containment import (
    ExecutionConfig,
    ExecutionContext,
    PostgresBudgetBackend,
    WrapOptions,
    report_cost,
)
from chainwarden.shield.types import Decision


def test_reserve_and_settle_are_one_round_trip_each() -> None:
    backend = PostgresBudgetBackend(postgres_dsn(), key=f"rt-{uuid.uuid4().hex}", pool_size=1)
    try:
        for _ in range(6):  # past psycopg's prepare threshold: the steady state is counted
            backend.settle(backend.reserve(0.01, 100.0), 0.01)
        pool = backend._connected()
        conn = pool.getconn(5)
        pool.putconn(conn)  # the pool's only connection: every call below uses it
        with traced(conn) as measure:
            reserve = measure(lambda: backend.reserve(0.01, 100.0))
            rid = backend.reserve(0.02, 100.0)
            settle = measure(lambda: backend.settle(rid, 0.03))
            refused = measure(lambda: _refused(backend))
            ctx = ExecutionContext(ExecutionConfig(10.0, 100, 10, budget_backend=backend))
            wrapped = measure(
                lambda: ctx.wrap_llm_call(
                    lambda: report_cost(0.001), WrapOptions("call", cost_estimate_hint=0.01)
                )
            )
        assert (round_trips(reserve), statements(reserve)) == (1, 1), reserve
        assert (round_trips(settle), statements(settle)) == (1, 1), settle
        assert round_trips(refused) == 1
        assert round_trips(wrapped) == 2, wrapped
        assert backend.get_reserved() == 0.01 * 1  # only the first measured reserve is still held
    finally:
        backend.reset()
        backend.close()


def _refused(backend: PostgresBudgetBackend) -> None:
    try:
        backend.reserve(1_000.0, 100.0)
    except OverflowError:
        return
    raise AssertionError("a reserve over the ceiling was admitted")


def test_a_wrapped_call_is_allowed_and_charged_once() -> None:
    backend = PostgresBudgetBackend(postgres_dsn(), key=f"rt-{uuid.uuid4().hex}")
    try:
        ctx = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=backend))
        assert ctx.wrap_llm_call(lambda: report_cost(0.25), WrapOptions("call", cost_estimate_hint=0.1)) is (
            Decision.ALLOW
        )
        assert (backend.get(), backend.get_reserved()) == (0.25, 0.0)
    finally:
        backend.reset()
        backend.close()
