"""docs/design.md §31 on a real redis-server: the URL's password never shows, and a budget whose data the
server lost (restarted without persistence) fails closed instead of starting again from zero."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from budget_servers import RedisServer, fresh_key
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from chainwarden.containment import (
    BudgetBackendUnavailable,
    ExecutionConfig,
    ExecutionContext,
    RedisBudgetBackend,
    WrapOptions,
    report_cost,
)
from chainwarden.otel import export_snapshot
from chainwarden.shield.types import Decision

SECRET = "s3cret-Pa55"  # the password of the test's own throwaway server


@pytest.fixture
def guarded() -> Iterator[RedisServer]:
    server = RedisServer(password=SECRET)
    server.start()
    try:
        yield server
    finally:
        server.remove()


def spend(ctx: ExecutionContext, cost: float) -> Decision:
    return ctx.wrap_llm_call(lambda: report_cost(cost), WrapOptions("call", cost_estimate_hint=cost))


def test_the_password_appears_nowhere(guarded: RedisServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    backend = RedisBudgetBackend(guarded.url, key=fresh_key(), timeout_s=1.0)
    assert SECRET in guarded.url
    seen: list[str] = [repr(backend)]
    ctx = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=backend))
    assert spend(ctx, 0.25) is Decision.ALLOW  # the password works
    guarded.stop()
    with pytest.raises(BudgetBackendUnavailable) as error:
        backend.get()
    seen += [str(error.value), repr(error.value)]
    assert spend(ctx, 0.25) is Decision.HALT
    assert ctx.last_stop_reason == "budget_backend_unavailable"
    snapshot = ctx.get_snapshot()
    seen += [f"{e.reason} {e.metadata}" for e in snapshot.events]
    seen += [r.getMessage() for r in caplog.records]
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    export_snapshot(ctx.get_graph_snapshot(), tracer_provider=provider, events=snapshot.events)
    spans = exporter.get_finished_spans()
    assert spans
    seen += [f"{s.attributes} {[(ev.name, ev.attributes) for ev in s.events]}" for s in spans]
    wrong = RedisBudgetBackend(guarded.url.replace(SECRET, "wrong-guess-99"), key="k", timeout_s=1.0)
    guarded.start()
    with pytest.raises(BudgetBackendUnavailable) as denied:
        wrong.get()
    seen += [str(denied.value), repr(wrong)]
    assert any("budget_backend_unavailable" in text or "unreachable" in text for text in seen)
    assert any("***" in text for text in seen)
    leaks = [text for text in seen if SECRET in text or "wrong-guess-99" in text]
    assert leaks == []
    backend.close()
    wrong.close()


def test_a_restart_without_persistence_fails_closed_instead_of_starting_from_zero(
    own_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """The campaign's case: $2.00 spent under a $1.00 ceiling once the server forgot the first dollar."""
    key = fresh_key()
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        worker_a = RedisBudgetBackend(own_redis.url, key=key, timeout_s=1.0)
        worker_b = RedisBudgetBackend(own_redis.url, key=key, timeout_s=1.0)
        a = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=worker_a))
        b = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=worker_b))
        assert spend(a, 0.75) is Decision.ALLOW
        assert spend(b, 0.5) is Decision.HALT  # one budget: 0.75 + 0.5 would pass the ceiling
    assert any("keeps no data across a restart" in r.getMessage() for r in caplog.records)
    own_redis.stop()
    own_redis.start()  # everything the server held is gone
    ran: list[int] = []
    for ctx, backend in ((a, worker_a), (b, worker_b)):
        assert ctx.wrap_llm_call(lambda: ran.append(1), WrapOptions("after", 0.1)) is Decision.HALT
        assert ctx.last_stop_reason == "budget_backend_unavailable"
        assert ran == []
        with pytest.raises(BudgetBackendUnavailable, match="was lost"):
            backend.get()
        events = [e for e in ctx.get_snapshot().events if e.event_type == "budget_backend_unavailable"]
        assert events and "was lost" in events[-1].reason
    # An operator starts a new budget: reset() adopts a new generation; the other backend stays closed.
    worker_a.reset()
    assert worker_a.get() == 0.0
    next_period = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=worker_a))
    assert spend(next_period, 0.5) is Decision.ALLOW
    with pytest.raises(BudgetBackendUnavailable, match="was lost"):
        worker_b.get()
    worker_a.close()
    worker_b.close()


def test_a_persistent_server_keeps_the_budget_across_a_restart(caplog: pytest.LogCaptureFixture) -> None:
    server = RedisServer(persistent=True)
    server.start()
    try:
        with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
            backend = RedisBudgetBackend(server.url, key=fresh_key(), timeout_s=1.0)
            ctx = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=backend))
            assert spend(ctx, 0.75) is Decision.ALLOW
        assert not any("keeps no data" in r.getMessage() for r in caplog.records)
        server.stop()
        server.start()
        assert backend.get() == pytest.approx(0.75)
        assert spend(ctx, 0.5) is Decision.HALT
        assert ctx.last_stop_reason == "budget_exceeded"
        assert spend(ctx, 0.25) is Decision.ALLOW
        backend.close()
    finally:
        server.remove()
