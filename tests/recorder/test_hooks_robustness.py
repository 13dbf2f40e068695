"""Observers are checked when the graph is built; a failing observer or subscriber is logged at WARNING
on chainwarden.recorder with its name and leaves the graph exactly as it would be without it
(docs/design.md §22)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from chainwarden import ExecutionGraph, NodeEvent

METHODS = ("on_node_start", "on_node_complete", "on_node_failed", "on_decision")


class AllRaise:
    def on_node_start(self, node_id: str, operation: str, metadata: dict[str, Any]) -> None:
        raise RuntimeError("start bug")

    def on_node_complete(self, node_id: str, cost_usd: float, duration_ms: float) -> None:
        raise ValueError("complete bug")

    def on_node_failed(self, node_id: str, error: str) -> None:
        raise KeyError("failed bug")

    def on_decision(self, node_id: str, decision: str, reason: str) -> None:
        raise ZeroDivisionError("decision bug")


class Recorder:
    """A well-behaved observer after the failing one: it must still see every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def on_node_start(self, node_id: str, operation: str, metadata: dict[str, Any]) -> None:
        self.calls.append(("start", node_id))

    def on_node_complete(self, node_id: str, cost_usd: float, duration_ms: float) -> None:
        self.calls.append(("complete", node_id))

    def on_node_failed(self, node_id: str, error: str) -> None:
        self.calls.append(("failed", node_id))

    def on_decision(self, node_id: str, decision: str, reason: str) -> None:
        self.calls.append(("decision", node_id))


class OnlyComplete:
    """The reference calls only the methods an observer has: a partial observer is valid."""

    def __init__(self) -> None:
        self.completed: list[str] = []

    def on_node_complete(self, node_id: str, cost_usd: float, duration_ms: float) -> None:
        self.completed.append(node_id)


def failing_subscriber(event: NodeEvent) -> None:
    raise RuntimeError(f"subscriber bug on {event.node_id}")


def drive(graph: ExecutionGraph) -> None:
    root = graph.create_root("root")
    ok = graph.begin_node(root, "llm", "plan", model="m")
    graph.mark_running(ok)
    graph.mark_success(ok, 0.25, 10, 20)
    bad = graph.begin_node(root, "tool", "search")
    graph.increment_retries(bad)
    graph.mark_failure(bad, "TimeoutError")
    halted = graph.begin_node(root, "llm", "answer")
    graph.mark_halt(halted, "budget_exceeded")


def stable(graph: ExecutionGraph) -> dict[str, Any]:
    """The snapshot without wall-clock fields."""
    snap = graph.snapshot()
    snap.pop("snapshot_ts_ms")  # wall clock: two snapshots may straddle a millisecond
    for node in snap["nodes"].values():
        node.pop("start_ts_ms")
        node.pop("end_ts_ms")
    snap["aggregates"] = {
        k: v for k, v in snap["aggregates"].items() if "rate" not in k and "velocity" not in k
    }
    return snap


@pytest.mark.parametrize("bad", ["x", b"observer", 5, 1.5, True, {"a": 1}])
def test_observers_that_are_not_a_list_are_refused(bad: object) -> None:
    with pytest.raises(TypeError, match=r"^observers must be a list of observers or None"):
        ExecutionGraph(observers=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("item", [5, "x", object(), None, type("Near", (), {"on_node_start": 3})()])
def test_items_without_an_observer_method_are_refused(item: object) -> None:
    with pytest.raises(TypeError, match=r"^observers\[1\] must provide at least one of on_node_start\(\)"):
        ExecutionGraph(observers=[Recorder(), item])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^observer must provide at least one of on_node_start\(\)"):
        ExecutionGraph().add_observer(item)


def test_partial_and_generator_observers_are_accepted() -> None:
    partial = OnlyComplete()
    g = ExecutionGraph(observers=(o for o in [partial]))
    drive(g)
    assert partial.completed == ["n000002"]


def test_failing_hooks_are_logged_by_name_and_change_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="chainwarden.recorder")
    witness_hooked, witness_plain = Recorder(), Recorder()
    seen_hooked: list[NodeEvent] = []
    seen_plain: list[NodeEvent] = []

    hooked = ExecutionGraph(chain_id="c", observers=[AllRaise(), witness_hooked])
    hooked.add_subscriber(failing_subscriber)
    hooked.add_subscriber(seen_hooked.append)
    plain = ExecutionGraph(chain_id="c", observers=[witness_plain])
    plain.add_subscriber(seen_plain.append)
    drive(hooked)
    drive(plain)

    assert stable(hooked) == stable(plain)
    assert witness_hooked.calls == witness_plain.calls
    assert [(e.node_id, e.status) for e in seen_hooked] == [(e.node_id, e.status) for e in seen_plain]

    records = [r for r in caplog.records if r.name == "chainwarden.recorder"]
    assert all(r.levelno == logging.WARNING and r.exc_info for r in records)
    messages = [r.getMessage() for r in records]
    for expected in (
        "observer AllRaise.on_node_start raised RuntimeError('start bug')",
        "observer AllRaise.on_node_complete raised ValueError('complete bug')",
        "observer AllRaise.on_node_failed raised KeyError('failed bug')",
        "observer AllRaise.on_decision raised ZeroDivisionError('decision bug')",
        "subscriber failing_subscriber raised RuntimeError('subscriber bug on n000002')",
    ):
        assert expected in messages, messages
    # Missing methods of partial observers are not failures: nothing logged for them.
    assert not any("OnlyComplete" in m for m in messages)


def test_a_failing_logging_handler_does_not_break_the_graph() -> None:
    class Exploding(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            raise RuntimeError("handler down")

    logger = logging.getLogger("chainwarden.recorder")
    handler = Exploding()
    logger.addHandler(handler)
    raise_exceptions = logging.raiseExceptions
    logging.raiseExceptions = False  # as in production: a broken handler is reported, not raised
    try:
        g = ExecutionGraph(observers=[AllRaise()])
        drive(g)
        assert [n["status"] for n in g.snapshot()["nodes"].values()] == ["created", "success", "fail", "halt"]
    finally:
        logging.raiseExceptions = raise_exceptions
        logger.removeHandler(handler)


def test_base_exceptions_from_observers_still_propagate() -> None:
    class Interrupts:
        def on_node_complete(self, *args: Any) -> None:
            raise KeyboardInterrupt

    g = ExecutionGraph(observers=[Interrupts()])
    n = g.begin_node(g.create_root("r"), "llm", "x")
    with pytest.raises(KeyboardInterrupt):
        g.mark_success(n, 0.0)
    assert g.node(n)["status"] == "success"
