"""Hypothesis fuzz of the constructors: any value gives success or a TypeError/ValueError naming the
argument, never a panic, another exception type or a hang."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chainwarden import ExecutionGraph
from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import BudgetWindowHook, CircuitBreaker, ShieldPipeline

HUGE_TEXT = "x" * 1_000_000

anything = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**200), max_value=2**200),
    st.sampled_from([2**63 - 1, 2**63, 2**64, -(2**63) - 1, 10**400, -(10**400)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308]),
    st.text(alphabet=st.characters(), max_size=20),
    st.just(HUGE_TEXT),
    st.just("\udc80"),  # a lone surrogate
    st.binary(max_size=8),
    st.lists(st.integers(), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.just(object()),
    st.just(print),
)

FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def named(exc: BaseException, argument: str) -> bool:
    text = " ".join([str(exc), *getattr(exc, "__notes__", [])])
    return argument in text


def build_or_named_error(build: Callable[[], object], argument: str) -> object | None:
    try:
        return build()
    except (TypeError, ValueError) as exc:
        # PanicException derives from BaseException, so it is never caught here: it fails the test.
        assert named(exc, argument), f"{type(exc).__name__}: {exc} does not name {argument}"
        return None


def close(obj: object) -> None:
    if isinstance(obj, ExecutionContext):
        obj.close()


CONFIG_ARGS = {"max_cost_usd": 1.0, "max_steps": 10, "max_retries_total": 2, "timeout_ms": 0}
OPTION_ARGS = {
    "operation_name": "op",
    "cost_estimate_hint": 0.0,
    "timeout_ms": None,
    "retry_policy_override": None,
    "model": None,
}
METADATA_ARGS = {
    "request_id": "r",
    "chain_id": "c",
    "org_id": "",
    "team": "",
    "service": "",
    "user_id": None,
    "model": None,
    "tags": {},
}
GRAPH_ARGS = {
    "chain_id": None,
    "cost_rate_threshold_usd_per_sec": 0.1,
    "token_velocity_threshold": 500.0,
    "observers": None,
    "max_nodes": 0,
}
BREAKER_ARGS = {"failure_threshold": 5, "recovery_timeout": 60.0, "failure_predicate": None}
WINDOW_ARGS = {"max_calls": 10, "window_seconds": 60.0, "degrade_threshold": 0.8}
PIPELINE_ARGS = ["pre_dispatch", "egress", "retry", "budget", "tool_dispatch", "on_error_policy"]
CONTEXT_ARGS = ["pipeline", "metadata", "circuit_breaker", "parent", "metrics"]

CASES: list[tuple[str, Callable[..., object], dict[str, Any]]] = [
    ("ExecutionConfig", ExecutionConfig, CONFIG_ARGS),
    ("WrapOptions", WrapOptions, OPTION_ARGS),
    ("ChainMetadata", ChainMetadata, METADATA_ARGS),
    ("ExecutionGraph", ExecutionGraph, GRAPH_ARGS),
    ("CircuitBreaker", CircuitBreaker, BREAKER_ARGS),
    ("BudgetWindowHook", BudgetWindowHook, WINDOW_ARGS),
    ("ShieldPipeline", ShieldPipeline, dict.fromkeys(PIPELINE_ARGS)),
]


@pytest.mark.parametrize(("name", "cls", "defaults"), CASES, ids=[c[0] for c in CASES])
@FUZZ
@given(data=st.data())
def test_one_bad_argument_is_named(
    name: str, cls: Callable[..., object], defaults: dict[str, Any], data: Any
) -> None:
    argument = data.draw(st.sampled_from(sorted(defaults)), label="argument")
    value = data.draw(anything, label="value")
    build_or_named_error(lambda: cls(**{**defaults, argument: value}), argument)


@pytest.mark.parametrize(("name", "cls", "defaults"), CASES, ids=[c[0] for c in CASES])
@FUZZ
@given(data=st.data())
def test_all_arguments_at_once(
    name: str, cls: Callable[..., object], defaults: dict[str, Any], data: Any
) -> None:
    kwargs = {arg: data.draw(anything, label=arg) for arg in defaults}
    try:
        cls(**kwargs)
    except (TypeError, ValueError) as exc:
        assert any(named(exc, arg) for arg in kwargs), f"{type(exc).__name__}: {exc} names no argument"


@FUZZ
@given(argument=st.sampled_from(CONTEXT_ARGS), value=anything)
def test_execution_context_arguments(argument: str, value: object) -> None:
    config = ExecutionConfig(**CONFIG_ARGS)
    ctx = build_or_named_error(lambda: ExecutionContext(config, **{argument: value}), argument)
    close(ctx)


@FUZZ
@given(value=anything)
def test_execution_context_config(value: object) -> None:
    close(build_or_named_error(lambda: ExecutionContext(value), "config"))  # type: ignore[arg-type]


@FUZZ
@given(
    timeout_ms=st.one_of(st.integers(min_value=0, max_value=2**70), anything),
    max_steps=st.one_of(st.integers(min_value=0, max_value=2**70), anything),
)
def test_configs_that_build_give_contexts_that_work(timeout_ms: object, max_steps: object) -> None:
    """Whatever ExecutionConfig accepts, a context runs a call on it and closes without error."""
    try:
        config = ExecutionConfig(
            max_cost_usd=1.0, max_steps=max_steps, max_retries_total=1, timeout_ms=timeout_ms
        )  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return
    with ExecutionContext(config) as ctx:
        ctx.wrap_llm_call(lambda: None)
        ctx.get_snapshot()
