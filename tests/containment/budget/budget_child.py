"""A process sharing one budget with others (tests/containment/budget/test_budget_processes.py).

usage: budget_child.py spend KIND URL KEY SEED   -- calls until the shared budget refuses; prints its spend
       budget_child.py hold  KIND URL KEY TTL    -- holds $0.90 in a call that never ends (to be SIGKILLed)
"""

from __future__ import annotations

import json
import random
import sys
import time

from budget_servers import make_backend

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions, report_cost
from chainwarden.shield.types import Decision

ESTIMATE = 0.02
MAX_ACTUAL = 0.04  # actual costs run up to twice the estimate: the in-flight bound is (0.04 - 0.02) a process


def spend(kind: str, url: str, key: str, seed: int) -> None:
    rng = random.Random(seed)
    backend = make_backend(kind, url, key)
    ctx = ExecutionContext(ExecutionConfig(1.0, 100_000, 1000, budget_backend=backend))
    refused = 0
    print("ready", flush=True)
    sys.stdin.readline()  # all processes start spending together
    for _ in range(2000):
        actual = rng.uniform(0.0, MAX_ACTUAL)

        def call(cost: float = actual) -> None:
            time.sleep(rng.uniform(0.0, 0.003))  # let the processes interleave
            report_cost(cost)

        decision = ctx.wrap_llm_call(call, WrapOptions("llm", ESTIMATE))
        if decision is Decision.ALLOW:
            refused = 0
            continue
        assert ctx.last_stop_reason == "budget_exceeded", ctx.last_stop_reason
        refused += 1
        if refused >= 5:
            break
    snap = ctx.get_snapshot()
    ok = sum(1 for n in snap.nodes if n.status == "ok")
    print(json.dumps({"spent": snap.cost_usd_accumulated, "calls": ok}), flush=True)
    backend.close()


def hold(kind: str, url: str, key: str, ttl: float) -> None:
    backend = make_backend(kind, url, key, reservation_ttl_s=ttl)
    ctx = ExecutionContext(ExecutionConfig(1.0, 10, 1, budget_backend=backend))

    def never_ends() -> None:
        print("holding", flush=True)
        time.sleep(60)  # bounded even if nobody kills it

    ctx.wrap_llm_call(never_ends, WrapOptions("held", 0.9))


if __name__ == "__main__":
    mode, kind, url, key, arg = sys.argv[1:6]
    if mode == "spend":
        spend(kind, url, key, int(arg))
    else:
        hold(kind, url, key, float(arg))
