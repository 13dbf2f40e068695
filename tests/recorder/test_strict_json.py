"""docs/design.md §23: NaN and ±inf never enter the recorder, totals never overflow, and
`snapshot_json()` is always strict JSON. Every rejected call leaves the graph unchanged."""

from __future__ import annotations

import math
from typing import Any

import pytest

from chainwarden import ExecutionGraph

from ._state import frozen, strict_loads

NON_FINITE = [math.nan, math.inf, -math.inf]


def fresh() -> tuple[ExecutionGraph, str, str]:
    g = ExecutionGraph(chain_id="c")
    root = g.create_root("run", metadata={"ok": 1.5})
    node = g.begin_node(root, "llm", "plan", running=True)
    return g, root, node


def nested(value: float) -> list[dict[str, Any]]:
    return [
        {"x": value},
        {"a": [1, {"b": (2, value)}]},
        {"deep": {"l1": {"l2": {"l3": [[value]]}}}},
    ]


@pytest.mark.parametrize("value", NON_FINITE)
@pytest.mark.parametrize("depth", [0, 1, 2])
def test_non_finite_metadata_is_rejected_at_any_depth(value: float, depth: int) -> None:
    g, root, _ = fresh()
    before = frozen(g)
    meta = nested(value)[depth]
    with pytest.raises(ValueError, match=r"metadata must be strict JSON.*at metadata\["):
        g.begin_node(root, "tool", "t", metadata=meta)
    with pytest.raises(ValueError, match="strict JSON"):
        g.begin_node(root, "tool", "t", metadata=meta, running=True)
    assert frozen(g) == before
    empty = ExecutionGraph()
    with pytest.raises(ValueError, match="strict JSON"):
        empty.create_root("run", metadata=meta)
    assert empty.root_id is None and len(empty) == 0
    # Nothing was consumed: the next node gets the next id.
    assert g.begin_node(root, "tool", "t") == "n000003"


def test_two_huge_costs_are_refused_instead_of_writing_infinity() -> None:
    g, root, first = fresh()
    g.mark_success(first, 1e308)
    second = g.begin_node(root, "llm", "again", running=True)
    before = frozen(g)
    with pytest.raises(ValueError, match="total_cost_usd non-finite"):
        g.mark_success(second, 1e308)
    assert frozen(g) == before
    assert g.node(second)["status"] == "running"  # still open: a valid call finishes it
    g.mark_success(second, 1.0)
    snap = strict_loads(g.snapshot_json())
    assert snap["aggregates"]["total_cost_usd"] == 1e308
    assert math.isfinite(g.aggregates()["total_cost_usd"])


def test_token_total_beyond_int64_is_refused_instead_of_wrapping() -> None:
    g, root, first = fresh()
    g.mark_success(first, 0.0, tokens_out=2**63 - 1)
    second = g.begin_node(root, "llm", "again", running=True)
    before = frozen(g)
    with pytest.raises(ValueError, match="total_tokens_out exceed"):
        g.mark_success(second, 0.0, tokens_out=1)
    assert frozen(g) == before
    g.mark_success(second, 0.0, tokens_out=0)
    assert g.aggregates()["total_tokens_out"] == 2**63 - 1


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"cost_usd": 10**400}, "cost_usd is out of range"),
        ({"cost_usd": 0.0, "tokens_out": 2**63}, "tokens_out is out of range"),
        ({"cost_usd": 0.0, "tokens_in": 2**64 + 1}, "tokens_in is out of range"),
    ],
)
def test_numbers_too_large_are_value_errors(kwargs: dict[str, Any], match: str) -> None:
    g, _, node = fresh()
    before = frozen(g)
    with pytest.raises(ValueError, match=match):
        g.mark_success(node, **kwargs)
    assert frozen(g) == before


def test_huge_cost_never_puts_an_infinite_rate_in_an_event() -> None:
    g, _, node = fresh()
    g.mark_success(node, 1.7e308)
    [event] = g.drain_divergence_events()
    assert event["event_type"] == "COST_RATE_EXCEEDED"
    assert math.isfinite(event["cost_rate"])
