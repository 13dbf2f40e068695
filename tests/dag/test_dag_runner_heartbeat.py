"""A leased Runner renews the leases of what it executes and stops its heartbeat thread when a run ends."""

from __future__ import annotations

import asyncio
import threading
import time

from chainwarden.dag import ExecutionResult, Graph, Runner

LEASE_S = 0.3  # beats every 0.1 s


def heartbeat_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("chainwarden-heartbeat-") and t.is_alive()]


def one_task() -> Graph:
    g = Graph(leaf_repair=False)  # a workflow: no agent_message leaf after the task
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    return g


def test_a_sync_run_outlives_its_lease_and_stops_its_heartbeat() -> None:
    g, seen = one_task(), []

    def slow(node: object, context: object) -> ExecutionResult:
        first = g.node("t")["metadata"]["lease_expires_at"]
        time.sleep(LEASE_S * 2)  # two leases: only the heartbeat keeps the claim
        seen.append(g.node("t")["metadata"]["lease_expires_at"] > first)
        return ExecutionResult.finished(output={"ok": True})

    stats = Runner(g, {"task": slow}, worker_id="w", lease_s=LEASE_S).run_until_idle()
    assert seen == [True]
    assert stats.outcomes == {"finished": 1} and g.node("t")["state"] == "finished"
    assert heartbeat_threads() == []


def test_an_async_run_outlives_its_lease_and_stops_its_heartbeat() -> None:
    g, seen = one_task(), []

    async def slow(node: object, context: object) -> ExecutionResult:
        first = g.node("t")["metadata"]["lease_expires_at"]
        await asyncio.sleep(LEASE_S * 2)
        seen.append(g.node("t")["metadata"]["lease_expires_at"] > first)
        return ExecutionResult.finished(output={"ok": True})

    runner = Runner(g, {"task": slow}, worker_id="w", lease_s=LEASE_S)
    stats = asyncio.run(runner.arun_until_idle())
    assert seen == [True]
    assert stats.outcomes == {"finished": 1} and g.node("t")["state"] == "finished"
    assert heartbeat_threads() == []  # used to keep beating (idle) until the process ended
