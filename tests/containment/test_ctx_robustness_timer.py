"""The chainwarden-timeouts thread outlives every callback (docs/design.md §22), with real threads."""

from __future__ import annotations

import logging
import sys
import threading
import time
from typing import Any

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext
from chainwarden.containment._timeouts import Timeouts, timeouts
from chainwarden.containment._validate import MAX_TIMEOUT_MS
from chainwarden.shield import Decision, ShieldPipeline


def _raise_runtime() -> None:
    raise RuntimeError("callback bug")


def _raise_overflow() -> None:
    raise OverflowError("timeout value is too large")


def _raise_system_exit() -> None:
    raise SystemExit(3)


def _wait_for(scheduler: Timeouts, timeout_s: float = 5.0) -> None:
    """Blocks until every callback scheduled before now on ``scheduler`` has run."""
    done = threading.Event()
    scheduler.schedule(0.0, done.set)
    assert done.wait(timeout_s), "the timer thread stopped running callbacks"


def _timed_out_wait(timeout_ms: int) -> tuple[Decision, float, ExecutionContext]:
    """A call that waits on the chain's cancellation token, released by the chain timeout."""
    ctx = ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=1, timeout_ms=timeout_ms)
    )
    start = time.monotonic()
    decision = ctx.wrap_llm_call(lambda: ctx.cancellation_token.wait(10.0))
    return decision, time.monotonic() - start, ctx


def test_raising_callbacks_are_logged_and_a_later_chain_timeout_still_fires(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="chainwarden.containment")
    for callback in (_raise_runtime, _raise_overflow, _raise_system_exit):
        timeouts.schedule(0.0, callback)
    _wait_for(timeouts)
    messages = [r.getMessage() for r in caplog.records if r.name == "chainwarden.containment"]
    for name, exc in (
        ("_raise_runtime", "RuntimeError('callback bug')"),
        ("_raise_overflow", "OverflowError('timeout value is too large')"),
        ("_raise_system_exit", "SystemExit(3)"),
    ):
        assert any(name in m and exc in m and m.startswith("timeout callback") for m in messages), messages
    assert all(
        r.levelno == logging.WARNING and r.exc_info
        for r in caplog.records
        if "timeout callback" in r.getMessage()
    )

    _, elapsed, ctx = _timed_out_wait(100)
    # A behavioural bound: without the thread the call would wait its full 10 s.
    assert elapsed < 5.0  # the token wait would last 10 s without the timer thread
    assert ctx.cancellation_token.is_cancelled
    assert any(e.event_type == "timeout" for e in ctx.get_snapshot().events)


def test_a_dead_timer_thread_is_restarted_by_the_next_schedule() -> None:
    scheduler = Timeouts()
    _wait_for(scheduler)
    first = scheduler._thread
    assert first is not None and first.is_alive()
    # Stand in for a thread killed from outside: a finished thread in its place.
    dead = threading.Thread(target=lambda: None)
    dead.start()
    dead.join()
    scheduler._thread = dead
    _wait_for(scheduler)
    assert scheduler._thread is not dead and scheduler._thread.is_alive()


def test_far_deadlines_do_not_overflow_the_wait() -> None:
    scheduler = Timeouts()
    far = scheduler.schedule(MAX_TIMEOUT_MS / 1000.0, _raise_runtime)
    _wait_for(scheduler)  # the thread is waiting on the far deadline, and still serves near ones
    scheduler.cancel(far)
    assert scheduler._thread is not None and scheduler._thread.is_alive()


@pytest.mark.parametrize("delay", [-1.0, float("nan"), float("inf"), MAX_TIMEOUT_MS / 1000.0 + 1])
def test_schedule_rejects_delays_outside_the_documented_range(delay: float) -> None:
    scheduler = Timeouts()
    with pytest.raises(ValueError, match="delay_s"):
        scheduler.schedule(delay, _raise_runtime)
    assert scheduler._heap == [] and scheduler._callbacks == {}


@pytest.mark.parametrize("timeout_ms", [sys.maxsize, MAX_TIMEOUT_MS + 1, 2**64])
def test_timeouts_beyond_the_maximum_are_rejected_at_config_time(timeout_ms: int) -> None:
    with pytest.raises(ValueError, match="timeout_ms"):
        ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=0, timeout_ms=timeout_ms)


def test_the_maximum_timeout_is_accepted_and_does_not_fire() -> None:
    cfg = ExecutionConfig(max_cost_usd=1.0, max_steps=1, max_retries_total=1, timeout_ms=MAX_TIMEOUT_MS)
    with ExecutionContext(cfg) as ctx:
        assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW
        assert not ctx.cancellation_token.is_cancelled
    _, elapsed, _ = _timed_out_wait(100)  # the far deadline does not delay near ones
    assert elapsed < 5.0  # the token wait would last 10 s without the timer thread


class EventsFail(ShieldPipeline):
    """A valid pipeline whose get_events breaks when the chain's stop is reported."""

    def get_events(self) -> list[Any]:
        raise RuntimeError("events store down")


def test_a_hanging_hook_of_one_chain_does_not_delay_another_chains_timeout() -> None:
    """docs/design.md §32: the timer thread runs no user code. A chain whose pipeline hangs in
    ``get_events`` times out; another chain's 100 ms timeout still fires (the old timer read the
    events on its own thread and every later timeout waited behind the hang)."""
    release = threading.Event()
    callers: list[str] = []

    class EventsHang(ShieldPipeline):
        def get_events(self) -> list[Any]:
            callers.append(threading.current_thread().name)
            release.wait(30.0)
            return []

    hung = ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=1, timeout_ms=20),
        pipeline=EventsHang(),
    )
    try:
        deadline = time.monotonic() + 5.0
        while not hung.cancellation_token.is_cancelled and time.monotonic() < deadline:
            time.sleep(0.005)
        assert hung.cancellation_token.is_cancelled, "the hung chain's own timeout marked it"
        _, elapsed, ctx = _timed_out_wait(100)
        assert elapsed < 5.0  # behind the hang it would wait until the hook is released (30 s)
        assert ctx.cancellation_token.is_cancelled
        assert "chainwarden-timeouts" not in callers
    finally:
        release.set()
    # The hung chain's stop is reported on the reader's thread, with its event.
    assert any(e.event_type == "timeout" for e in hung.get_snapshot().events)
    assert "chainwarden-timeouts" not in callers
    hung.close()


def test_a_chain_whose_pipeline_events_raise_still_times_out_and_snapshots(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="chainwarden.containment")
    broken = ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=1, timeout_ms=20),
        pipeline=EventsFail(),
    )
    assert broken.cancellation_token.wait(5.0), "the timeout marked the chain"
    snap = broken.get_snapshot()  # the raising hook is logged, the snapshot still comes
    assert [e.event_type for e in snap.events if e.hook == "ExecutionContext"] == ["timeout"]
    assert any("get_events() raised" in r.getMessage() for r in caplog.records)
    assert broken.wrap_llm_call(lambda: None) is Decision.HALT
    assert broken.last_stop_reason == "timeout"
    broken.close()

    _, elapsed, ctx = _timed_out_wait(100)
    assert elapsed < 5.0  # the token wait would last 10 s without the timer thread
    assert ctx.cancellation_token.is_cancelled


def test_a_callback_that_cannot_be_named_is_still_survived(caplog: pytest.LogCaptureFixture) -> None:
    class Nameless:
        def __getattr__(self, name: str) -> Any:  # reached for __qualname__
            raise RuntimeError("no name")

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

        def __call__(self) -> None:
            raise ValueError("callback bug")

    caplog.set_level(logging.WARNING, logger="chainwarden.containment")
    scheduler = Timeouts()
    scheduler.schedule(0.0, Nameless())
    _wait_for(scheduler)
    assert any(r.getMessage().startswith("timeout callback Nameless raised") for r in caplog.records)
