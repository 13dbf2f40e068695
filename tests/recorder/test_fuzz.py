"""Hypothesis fuzzing of every public entry point of `ExecutionGraph` with hostile
arguments: each call succeeds or raises a clear Python exception (never a Rust panic,
which surfaces as a BaseException and fails the test), and a call that raises leaves the
snapshot and the aggregates exactly as they were."""

from __future__ import annotations

import math
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings

from chainwarden import ExecutionGraph

from ._state import frozen

CLEAR_ERRORS = (TypeError, ValueError, KeyError, RuntimeError)

odd_text = st.one_of(
    st.text(max_size=8),
    st.text(
        st.characters(codec=None, categories=["Cs", "Cc", "Co", "Zl"]), max_size=4
    ),  # lone surrogates, NUL
    st.sampled_from(["", "\x00", "n000001", "n000002", "n1", "n0000001", "n" + "9" * 30, "é" * 3, "\ud800"]),
    st.builds(lambda n: "x" * n, st.sampled_from([1_000, 100_000])),
)
numbers = st.one_of(
    st.integers(-(2**70), 2**70),
    st.sampled_from([0, 1, 2**63 - 1, 2**63, 2**64, -1, 10**400]),
    st.floats(),
    st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -0.0, 5e-324]),
)


def deep(n: int, leaf: Any) -> Any:
    for _ in range(n):
        leaf = {"k": [leaf]}
    return leaf


scalars = st.one_of(st.none(), st.booleans(), numbers, odd_text, st.binary(max_size=3))
hostile = st.one_of(
    scalars,
    st.lists(scalars, max_size=3),
    st.dictionaries(odd_text, scalars, max_size=3),
    st.dictionaries(st.integers(), scalars, min_size=1, max_size=2),
    st.builds(deep, st.sampled_from([5, 150, 250]), scalars),
    st.builds(object),
)
ids = st.one_of(st.sampled_from(["n000001", "n000002", "n000003", "n000004", "n000005"]), hostile)
kinds = st.one_of(st.sampled_from(["llm", "tool", "system", "memory_read", "memory_write"]), hostile)

calls = st.one_of(
    st.tuples(st.just("create_root"), odd_text, hostile),
    st.tuples(
        st.just("begin_node"),
        ids,
        kinds,
        odd_text,
        st.one_of(st.none(), odd_text, hostile),
        hostile,
        st.booleans(),
    ),
    st.tuples(st.just("mark_running"), ids),
    st.tuples(
        st.just("mark_success"), ids, numbers, st.one_of(st.none(), numbers), st.one_of(st.none(), numbers)
    ),
    st.tuples(
        st.just("mark_failure"), ids, st.one_of(odd_text, hostile), st.one_of(st.none(), odd_text, hostile)
    ),
    st.tuples(st.just("mark_halt"), ids, st.one_of(st.none(), odd_text, hostile)),
    st.tuples(st.just("increment_retries"), ids),
    st.tuples(st.just("node"), ids),
    st.tuples(st.just("contains"), ids),
    st.tuples(st.just("add_subscriber"), hostile),
    st.tuples(st.just("from_snapshot"), st.one_of(hostile, st.binary(max_size=40))),
)


def call(g: ExecutionGraph, c: tuple[Any, ...]) -> None:
    name, *args = c
    if name == "create_root":
        g.create_root(args[0], metadata=args[1])
    elif name == "begin_node":
        parent, kind, label, model, meta, running = args
        g.begin_node(parent, kind, label, model=model, metadata=meta, running=running)
    elif name == "mark_success":
        g.mark_success(args[0], args[1], tokens_in=args[2], tokens_out=args[3])
    elif name == "mark_failure":
        g.mark_failure(args[0], args[1], stop_reason=args[2])
    elif name == "mark_halt":
        g.mark_halt(args[0], stop_reason=args[1])
    elif name == "contains":
        assert isinstance(args[0] in g, bool)
    elif name == "from_snapshot":
        ExecutionGraph.from_snapshot(args[0])
    else:
        getattr(g, name)(*args)


@pytest.mark.slow
@settings(
    max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
@given(max_nodes=st.sampled_from([0, 2, 4]), sequence=st.lists(calls, max_size=25))
def test_hostile_call_sequences(max_nodes: int, sequence: list[tuple[Any, ...]]) -> None:
    g = ExecutionGraph(chain_id="fuzz", max_nodes=max_nodes)
    g.create_root("run")
    g.mark_success(g.begin_node("n000001", "llm", "seed", running=True), 0.5, tokens_out=3)
    for c in sequence:
        before = frozen(g)
        try:
            call(g, c)
        except CLEAR_ERRORS:
            assert frozen(g) == before, c[0]
        g.snapshot()
        g.drain_divergence_events()
    # Whatever happened, the graph still round-trips through its own snapshot.
    loaded = ExecutionGraph.from_snapshot(g.snapshot_json(), max_nodes=max_nodes)
    assert frozen(loaded)[:3] == frozen(g)[:3]


@settings(max_examples=200, deadline=None)
@given(
    chain_id=st.one_of(st.none(), odd_text, hostile),
    rate=st.one_of(st.none(), numbers, hostile),
    velocity=st.one_of(st.none(), numbers, hostile),
    max_nodes=st.one_of(st.none(), numbers, hostile),
)
def test_hostile_constructor_arguments(chain_id: Any, rate: Any, velocity: Any, max_nodes: Any) -> None:
    try:
        g = ExecutionGraph(
            chain_id=chain_id,
            cost_rate_threshold_usd_per_sec=rate,
            token_velocity_threshold=velocity,
            max_nodes=max_nodes,
        )
    except CLEAR_ERRORS:
        return
    g.create_root("run")
    frozen(g)
