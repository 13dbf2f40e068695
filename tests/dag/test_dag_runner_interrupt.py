"""The Runner under interruption (KeyboardInterrupt, SystemExit, cancellation) and its construction checks."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import threading
import time
from typing import Any

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext
from chainwarden.dag import DagInvalidArgumentError, ExecutionResult, Graph, Runner

Node = dict[str, Any]
Ctx = list[dict[str, Any]]


def tasks(*ids: str) -> Graph:
    g = Graph()
    with g.mutate() as m:
        for node_id in ids:
            m.create_node("task", node_id=node_id)
    return g


def ok(node: Node, context: Ctx) -> ExecutionResult:
    return ExecutionResult.finished(output={"result": node["node_id"]})


def assert_interrupted(g: Graph, node_id: str) -> None:
    node = g.node(node_id)
    assert (node["state"], node["metadata"]["reason"]) == ("cancelled", "interrupted")
    assert node["finished_at"] is not None


def no_running(g: Graph) -> bool:
    return all(n["state"] != "running" for n in g.nodes())


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, SystemExit])
def test_sync_interruption_cancels_the_node_and_the_claimed_rest_then_reraises(
    interruption: type[BaseException],
) -> None:
    g = tasks("a", "b", "c")

    def executor(node: Node, context: Ctx) -> ExecutionResult:
        if node["node_id"] == "b":
            raise interruption()
        return ok(node, context)

    with pytest.raises(interruption):
        Runner(g, {"task": executor}).run_until_idle()
    assert g.node("a")["state"] == "finished"  # ran before the interruption: its result is kept
    assert_interrupted(g, "b")
    assert_interrupted(g, "c")  # claimed in the same tick but never started
    assert no_running(g) and g.check_invariants() is None
    # Interrupted nodes are ordinary cancelled nodes: they can be retried.
    with g.mutate() as m:
        m.retry("b", new_node_id="b2")
    Runner(g, {"task": ok}).run_until_idle()
    assert g.node("b2")["state"] == "finished" and g.node("b2")["metadata"] == {"attempt": 2}


def test_interruption_inside_an_execution_context_is_still_marked() -> None:
    class PassThrough:
        def wrap_tool_call(self, fn: Any, options: object = None) -> str:
            fn()
            return "ALLOW"

        def wrap_llm_call(self, fn: Any, options: object = None) -> str:
            fn()
            return "ALLOW"

    g = tasks("t")

    def executor(node: Node, context: Ctx) -> ExecutionResult:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Runner(g, {"task": executor}, execution_context=PassThrough()).tick()
    assert_interrupted(g, "t")


def test_keyboard_interrupt_delivered_to_a_worker_thread() -> None:
    """A real asynchronous KeyboardInterrupt lands in an executor running in another thread."""
    g = tasks("slow", "next")
    started = threading.Event()
    caught: list[BaseException] = []

    def slow(node: Node, context: Ctx) -> ExecutionResult:
        started.set()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the interruption arrives between bytecodes here
            time.sleep(0.001)
        return ok(node, context)

    def work() -> None:
        try:
            Runner(g, {"task": slow}).run_until_idle()
        except BaseException as exc:  # what the test observes
            caught.append(exc)

    worker = threading.Thread(target=work)
    worker.start()
    assert started.wait(10)
    assert worker.ident is not None
    hit = ctypes.pythonapi.PyThreadState_SetAsyncExc(
        ctypes.c_ulong(worker.ident), ctypes.py_object(KeyboardInterrupt)
    )
    assert hit == 1
    worker.join(15)
    assert not worker.is_alive()
    assert len(caught) == 1 and isinstance(caught[0], KeyboardInterrupt)
    assert_interrupted(g, "slow")
    assert_interrupted(g, "next")
    assert no_running(g)


def test_async_keyboard_interrupt_marks_every_inflight_node() -> None:
    g = tasks("a", "b", "c")

    async def executor(node: Node, context: Ctx) -> ExecutionResult:
        if node["node_id"] == "a":
            return ok(node, context)
        if node["node_id"] == "b":
            await asyncio.sleep(0.01)
            raise KeyboardInterrupt
        await asyncio.sleep(5)  # c is still in flight when b interrupts the run (bounded: docs/testing.md)
        return ok(node, context)

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(Runner(g, {"task": executor}).arun_until_idle(concurrency=3))
    assert g.node("a")["state"] == "finished"
    assert_interrupted(g, "b")
    assert_interrupted(g, "c")
    assert no_running(g) and g.check_invariants() is None


async def test_cancelling_the_async_run_cancels_inflight_nodes() -> None:
    g = tasks("a", "b")
    started = asyncio.Event()
    cancelled: list[str] = []

    async def executor(node: Node, context: Ctx) -> ExecutionResult:
        if node["node_id"] == "b":
            started.set()
        try:
            await asyncio.sleep(5)  # until cancelled; bounded so a missed cancel fails, not hangs
        except asyncio.CancelledError:
            cancelled.append(node["node_id"])
            raise
        return ok(node, context)

    run = asyncio.create_task(Runner(g, {"task": executor}).arun_until_idle(concurrency=2))
    await asyncio.wait_for(started.wait(), 5)
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    await asyncio.sleep(0)  # lets the cancelled executor tasks run their handlers
    assert_interrupted(g, "a")
    assert_interrupted(g, "b")
    assert sorted(cancelled) == ["a", "b"]
    assert no_running(g)


async def test_cancelled_error_escaping_an_executor_is_reraised() -> None:
    g = tasks("t")

    async def executor(node: Node, context: Ctx) -> ExecutionResult:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await Runner(g, {"task": executor}).arun_until_idle()
    assert_interrupted(g, "t")


def test_an_ordinary_exception_is_a_node_failure_with_its_traceback_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    g = tasks("t")

    def executor(node: Node, context: Ctx) -> ExecutionResult:
        raise ValueError("bad row 7")

    with caplog.at_level(logging.DEBUG, logger="chainwarden.dag"):
        assert Runner(g, {"task": executor}).tick() == ["t"]
    assert g.node("t")["metadata"]["error"] == "ValueError: bad row 7"
    (record,) = [r for r in caplog.records if r.name == "chainwarden.dag" and r.exc_info]
    assert record.levelno == logging.DEBUG and "t" in record.getMessage()
    assert record.exc_info is not None and isinstance(record.exc_info[1], ValueError)
    assert "in executor" in caplog.text  # the traceback names the executor's frame


def test_executor_maps_are_checked_at_construction() -> None:
    g = Graph()
    with pytest.raises(DagInvalidArgumentError, match="executors key 'tool'") as info:
        Runner(g, {"tool": ok})
    assert info.value.code == "dag.invalid_argument"
    with pytest.raises(DagInvalidArgumentError, match="executors must register"):
        Runner(g, {})
    with pytest.raises(DagInvalidArgumentError, match="executors key 'summary'"):
        Runner(g, {"task": ok, "summary": ok})
    with pytest.raises(TypeError, match=r"executors\['task'\] must be callable"):
        Runner(g, {"task": "ok"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="executors must be a mapping"):
        Runner(g, [("task", ok)])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="graph must be"):
        Runner("g", {"task": ok})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="wrap_options"):
        Runner(g, {"task": ok}, wrap_options=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="wrap_tool_call"):
        Runner(g, {"task": ok}, execution_context=object())
    # A partial map is fine: a node type without an executor errors when it runs (api-dag.md).
    Runner(g, {"agent_message": ok})


def test_interruption_through_chainwarden_execution_context() -> None:
    g = tasks("t")
    ctx = ExecutionContext(config=ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=3))

    def executor(node: Node, context: Ctx) -> ExecutionResult:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Runner(g, {"task": executor}, execution_context=ctx).tick()
    assert_interrupted(g, "t")
