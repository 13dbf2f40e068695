"""Real processes sharing one budget through each real server: the ceiling holds across them, and a
SIGKILLed process's hold expires so the others can use it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from budget_servers import fresh_key, make_backend

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield.types import Decision

CHILD = Path(__file__).with_name("budget_child.py")
PROCESSES = 4
# budget_child.py: estimate $0.02, actual up to $0.04, one call in flight per process (docs/design.md §20).
IN_FLIGHT_BOUND = PROCESSES * (0.04 - 0.02)


def child(*args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(CHILD.parent)}
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_four_processes_never_spend_more_than_the_budget_plus_the_in_flight_bound(
    backend_spec: tuple[str, str],
) -> None:
    kind, url = backend_spec
    key = fresh_key()
    procs = [child("spend", kind, url, key, str(seed)) for seed in range(PROCESSES)]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    reports = []
    for proc in procs:
        assert proc.stdout is not None
        out = proc.stdout.read()  # the child prints its report and exits; the test timeout bounds this
        proc.stdout.close()
        assert proc.wait(timeout=50) == 0
        reports.append(json.loads(out))
    backend = make_backend(kind, url, key)
    try:
        total = backend.get()
        assert backend.get_reserved() == 0.0
    finally:
        backend.reset()
        backend.close()
    # Every process did spend, the shared total is exactly what they charged, and it stays bounded.
    assert all(r["calls"] > 0 for r in reports)
    assert total == pytest.approx(sum(r["spent"] for r in reports), abs=1e-9)
    assert total <= 1.0 + IN_FLIGHT_BOUND + 1e-9
    assert total > 1.0 - 0.05  # the processes stopped because the shared budget ran out, not early


@pytest.mark.slow
@pytest.mark.timeout(30)
def test_a_sigkilled_process_releases_its_hold_when_it_expires(backend_spec: tuple[str, str]) -> None:
    kind, url = backend_spec
    key = fresh_key()
    holder = child("hold", kind, url, key, "1.0")
    backend: Any = make_backend(kind, url, key)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "holding"
        assert backend.get_reserved() == pytest.approx(0.9)
        ctx = ExecutionContext(ExecutionConfig(1.0, 100, 10, budget_backend=backend))
        assert ctx.wrap_llm_call(lambda: None, WrapOptions("blocked", 0.5)) is Decision.HALT
        assert ctx.last_stop_reason == "budget_exceeded"
        holder.send_signal(signal.SIGKILL)
        assert holder.wait(timeout=10) == -signal.SIGKILL
        deadline = time.monotonic() + 10.0
        decision = Decision.HALT
        while decision is Decision.HALT and time.monotonic() < deadline:
            time.sleep(0.1)
            decision = ctx.wrap_llm_call(lambda: None, WrapOptions("after", 0.5))
        assert decision is Decision.ALLOW
        assert (backend.get(), backend.get_reserved()) == (pytest.approx(0.5), 0.0)
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
        for stream in (holder.stdin, holder.stdout):
            if stream is not None:
                stream.close()
        backend.reset()
        backend.close()
