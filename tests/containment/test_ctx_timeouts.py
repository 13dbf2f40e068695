"""The shared timeout thread: deadline order, cancellation, one thread for many chains."""

import threading

from chainwarden.containment import ExecutionConfig, ExecutionContext
from chainwarden.containment._timeouts import Timeouts


def test_callbacks_run_in_deadline_order_and_cancelled_ones_never() -> None:
    timeouts = Timeouts()
    fired: list[str] = []
    done = threading.Event()
    # Deadlines half a second apart: scheduling "early" may come late on a loaded machine, yet its
    # deadline must still fall before that of "late" (docs/testing.md).
    timeouts.schedule(0.6, lambda: fired.append("late"))
    cancelled = timeouts.schedule(0.4, lambda: fired.append("cancelled"))
    timeouts.schedule(0.1, lambda: fired.append("early"))
    timeouts.schedule(0.7, done.set)
    timeouts.cancel(cancelled)
    assert done.wait(30)
    assert fired == ["early", "late"]


def test_many_chains_with_timeouts_share_one_thread() -> None:
    before = {t.name for t in threading.enumerate()}
    contexts = [ExecutionContext(ExecutionConfig(1.0, 10, 1, timeout_ms=3_600_000)) for _ in range(50)]
    names = [t.name for t in threading.enumerate() if t.name not in before]
    assert names.count("chainwarden-timeouts") <= 1
    assert len(names) <= 1
    for ctx in contexts:
        ctx.close()
    assert all(ctx.cancellation_token.is_cancelled for ctx in contexts)


def test_cancelled_entries_do_not_pile_up() -> None:
    timeouts = Timeouts()
    handles = [timeouts.schedule(3600.0, lambda: None) for _ in range(1000)]
    for handle in handles:
        timeouts.cancel(handle)
    assert len(timeouts._heap) <= 64
