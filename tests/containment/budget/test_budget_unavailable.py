"""A shared-budget server that goes away: calls are refused with ``budget_backend_unavailable`` and nothing is
charged (fail closed), or run on the local limits with a warning when configured to fail open; the backend
works again once the server is back."""

from __future__ import annotations

import logging
import subprocess
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from budget_servers import SCRIPTS, RedisServer, fresh_key
from postgres_server import postgres_dsn

from chainwarden.containment import (
    BudgetBackendUnavailable,
    ExecutionConfig,
    ExecutionContext,
    PostgresBudgetBackend,
    RedisBudgetBackend,
    WrapOptions,
    report_cost,
)
from chainwarden.shield.types import Decision

# Each call is well under a second; the first PostgreSQL case also creates its own server (initdb).
pytestmark = pytest.mark.timeout(60)


class Switchable:
    """A real server the test may stop and start, with a backend on it."""

    def __init__(self, backend: Any, stop: Callable[[], None], start: Callable[[], None]) -> None:
        self.backend = backend
        self.stop = stop
        self.start = start


@pytest.fixture(scope="module")
def pg_datadir() -> Iterator[str]:
    postgres_dsn()  # skips when the developer opted out of PostgreSQL
    datadir = subprocess.run(
        [str(SCRIPTS / "postgres-up.sh")], check=True, capture_output=True, text=True, timeout=120
    ).stdout.strip()
    try:
        yield datadir
    finally:
        subprocess.run([str(SCRIPTS / "postgres-down.sh"), datadir], check=True, timeout=60)


def _pg_ctl(datadir: str, action: str, *, check: bool = True) -> None:
    subprocess.run(
        [str(SCRIPTS / "postgres-ctl.sh"), datadir, action], check=check, timeout=60, capture_output=not check
    )


@pytest.fixture(params=["redis", "postgres"])
def server(request: pytest.FixtureRequest) -> Iterator[Switchable]:
    if request.param == "redis":
        redis = RedisServer()
        redis.start()
        backend: Any = RedisBudgetBackend(redis.url, key=fresh_key(), timeout_s=1.0)
        try:
            yield Switchable(backend, redis.stop, redis.start)
        finally:
            backend.close()
            redis.remove()
        return
    datadir: str = request.getfixturevalue("pg_datadir")
    dsn = f"host={datadir} port=5432 user=postgres dbname=postgres"
    backend = PostgresBudgetBackend(dsn, key=fresh_key(), timeout_s=1.0)
    try:
        yield Switchable(backend, lambda: _pg_ctl(datadir, "stop"), lambda: _pg_ctl(datadir, "start"))
    finally:
        _pg_ctl(datadir, "start", check=False)  # running again whatever the test did
        backend.reset()
        backend.close()


def test_a_stopped_server_refuses_calls_and_charges_nothing(
    server: Switchable, caplog: pytest.LogCaptureFixture
) -> None:
    backend = server.backend
    ctx = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=backend))
    assert ctx.wrap_llm_call(lambda: report_cost(0.1), WrapOptions("before", 0.05)) is Decision.ALLOW
    server.stop()
    ran: list[int] = []
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        paid = ctx.wrap_llm_call(lambda: ran.append(1), WrapOptions("paid", 0.05))
        free = ctx.wrap_tool_call(lambda: ran.append(2))
    assert (paid, free) == (Decision.HALT, Decision.HALT)
    assert ctx.last_stop_reason == "budget_backend_unavailable"
    assert ran == []
    snap = ctx.get_snapshot()
    assert snap.cost_usd_accumulated == pytest.approx(0.1)
    assert ctx.reserved_usd == 0.0
    unavailable = [e for e in snap.events if e.event_type == "budget_backend_unavailable"]
    assert unavailable
    assert all(e.decision == Decision.HALT for e in unavailable)
    assert "fail closed" in caplog.text
    with pytest.raises(BudgetBackendUnavailable):
        backend.get()
    # The server comes back: the backend reconnects and the chain goes on where it was.
    server.start()
    backend.reset()  # Redis ran without persistence; start both backends from the same state
    backend.add(0.1)
    assert ctx.wrap_llm_call(lambda: report_cost(0.2), WrapOptions("after", 0.05)) is Decision.ALLOW
    assert backend.get() == pytest.approx(0.3)
    assert ctx.get_snapshot().cost_usd_accumulated == pytest.approx(0.3)


def test_fail_open_lets_calls_run_on_the_local_limits_with_a_warning(
    server: Switchable, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = ExecutionConfig(0.25, 100, 10, budget_backend=server.backend, budget_backend_fail_open=True)
    ctx = ExecutionContext(cfg)
    server.stop()
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        first = ctx.wrap_llm_call(lambda: report_cost(0.2), WrapOptions("open", 0.1))
        second = ctx.wrap_llm_call(lambda: None, WrapOptions("local ceiling", 0.1))
    assert (first, second) == (Decision.ALLOW, Decision.HALT)
    assert ctx.last_stop_reason == "budget_exceeded"  # the core's own ceiling still holds
    assert "budget_backend_fail_open" in caplog.text
    events = ctx.get_snapshot().events
    assert (events[0].event_type, events[0].decision) == ("budget_backend_unavailable", Decision.ALLOW)
