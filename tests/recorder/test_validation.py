"""Bad input raises a typed error and leaves the graph exactly as it was."""

from __future__ import annotations

import math
from typing import Any

import pytest

from chainwarden import ExecutionGraph


@pytest.fixture
def graph() -> tuple[ExecutionGraph, str, str]:
    g = ExecutionGraph(chain_id="c")
    root = g.create_root("run")
    node = g.begin_node(root, "llm", "plan")
    g.mark_running(node)
    return g, root, node


def state(g: ExecutionGraph) -> Any:
    snap = g.snapshot()
    snap.pop("snapshot_ts_ms")
    return snap, g.drain_divergence_events()


@pytest.mark.parametrize("cost", [math.nan, math.inf, -math.inf, -0.01])
def test_bad_cost_is_value_error(graph: tuple[ExecutionGraph, str, str], cost: float) -> None:
    g, _, node = graph
    before = g.snapshot()
    with pytest.raises(ValueError, match="cost_usd"):
        g.mark_success(node, cost_usd=cost)
    after = g.snapshot()
    assert after["nodes"] == before["nodes"]
    assert after["aggregates"] == before["aggregates"]


@pytest.mark.parametrize(("field", "value"), [("tokens_in", -1), ("tokens_out", -5), ("tokens_out", 2**70)])
def test_bad_token_count_is_value_error(
    graph: tuple[ExecutionGraph, str, str], field: str, value: int
) -> None:
    g, _, node = graph
    with pytest.raises(ValueError, match=field):
        g.mark_success(node, 0.1, **{field: value})
    assert g.node(node)["status"] == "running"


@pytest.mark.parametrize(
    ("kwargs", "exc"),
    [
        ({"cost_usd": "0.1"}, TypeError),
        ({"cost_usd": True}, TypeError),
        ({"cost_usd": None}, TypeError),
        ({"cost_usd": 0.1, "tokens_in": 1.5}, TypeError),
        ({"cost_usd": 0.1, "tokens_out": True}, TypeError),
        ({"cost_usd": 0.1, "tokens_out": "3"}, TypeError),
    ],
)
def test_wrong_types_are_type_errors(
    graph: tuple[ExecutionGraph, str, str], kwargs: dict[str, Any], exc: type[Exception]
) -> None:
    g, _, node = graph
    with pytest.raises(exc):
        g.mark_success(node, **kwargs)
    assert g.node(node)["status"] == "running"
    assert g.aggregates()["total_llm_calls"] == 0


def test_int_cost_is_accepted(graph: tuple[ExecutionGraph, str, str]) -> None:
    g, _, node = graph
    g.mark_success(node, 2, tokens_out=3)
    assert g.node(node)["cost_usd"] == 2.0
    assert g.aggregates()["total_cost_usd"] == 2.0


def test_unknown_ids_are_key_errors(graph: tuple[ExecutionGraph, str, str]) -> None:
    g, _root, _ = graph
    before = state(g)
    for call in (
        lambda: g.mark_running("n999999"),
        lambda: g.mark_success("n000099", 0.0),
        lambda: g.mark_failure("nope", "E"),
        lambda: g.mark_halt("n1", "x"),
        lambda: g.increment_retries("n0000002"),
        lambda: g.node("n000077"),
        lambda: g.begin_node("n000050", "llm", "x"),
    ):
        with pytest.raises(KeyError):
            call()
    with pytest.raises(KeyError, match="Node not found: 'n999999'"):
        g.mark_running("n999999")
    with pytest.raises(KeyError, match="Parent node not found: 'x'"):
        g.begin_node("x", "llm", "y")
    assert state(g) == before
    assert len(g) == 2


def test_second_root_is_runtime_error(graph: tuple[ExecutionGraph, str, str]) -> None:
    g, root, _ = graph
    with pytest.raises(RuntimeError, match=f"Root node already exists: {root}"):
        g.create_root("again")
    assert len(g) == 2


def test_unknown_kind_is_value_error(graph: tuple[ExecutionGraph, str, str]) -> None:
    g, root, _ = graph
    with pytest.raises(ValueError, match="kind must be one of"):
        g.begin_node(root, "agent", "x")  # type: ignore[arg-type]
    assert len(g) == 2


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_nodes": -1},
        {"cost_rate_threshold_usd_per_sec": 0.0},
        {"cost_rate_threshold_usd_per_sec": math.nan},
        {"token_velocity_threshold": -1.0},
        {"token_velocity_threshold": math.inf},
    ],
)
def test_bad_constructor_arguments(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ExecutionGraph(**kwargs)


@pytest.mark.parametrize(
    "kwargs", [{"max_nodes": 2.5}, {"max_nodes": True}, {"cost_rate_threshold_usd_per_sec": "1"}]
)
def test_constructor_wrong_types(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        ExecutionGraph(**kwargs)


@pytest.mark.parametrize(
    ("metadata", "exc"),
    [
        ({"x": object()}, TypeError),
        ({1: "int key"}, TypeError),
        ({"big": 2**80}, ValueError),
        (["not", "a", "dict"], TypeError),
    ],
)
def test_bad_metadata(graph: tuple[ExecutionGraph, str, str], metadata: Any, exc: type[Exception]) -> None:
    g, root, _ = graph
    with pytest.raises(exc):
        g.begin_node(root, "tool", "t", metadata=metadata)
    assert len(g) == 2


def test_self_referencing_metadata_is_rejected(graph: tuple[ExecutionGraph, str, str]) -> None:
    g, root, _ = graph
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="nested too deeply"):
        g.begin_node(root, "tool", "t", metadata=loop)
    assert len(g) == 2
