"""Construction-time checks: collaborators missing a method, numeric bounds of the config types."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from veronica_core.circuit_breaker import CircuitBreaker as RefBreaker
from veronica_core.containment import ExecutionConfig as RefConfig
from veronica_core.containment import WrapOptions as RefOptions
from veronica_core.shield import ShieldPipeline as RefPipeline

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.containment._validate import MAX_COUNT, MAX_TIMEOUT_MS
from chainwarden.shield import Decision, ShieldPipeline


def config(**kw: Any) -> ExecutionConfig:
    base: dict[str, Any] = dict(max_cost_usd=1.0, max_steps=10, max_retries_total=3)
    base.update(kw)
    return ExecutionConfig(**base)


class NoEvents:
    """A duck-typed pipeline without get_events: the case that used to kill the timer thread."""

    def before_llm_call(self, ctx: Any) -> Decision:
        return Decision.ALLOW

    def before_tool_call(self, ctx: Any) -> Decision:
        return Decision.ALLOW

    def before_charge(self, ctx: Any, cost: float) -> Decision:
        return Decision.ALLOW

    def on_error(self, ctx: Any, err: BaseException) -> Decision:
        return Decision.RETRY


class DuckPipeline(NoEvents):
    def get_events(self) -> list[Any]:
        return []


class DuckBreaker:
    def check(self, context: Any) -> Any:
        return type("D", (), {"allowed": True, "reason": ""})()

    def record_success(self) -> None: ...
    def record_failure(self, *, error: BaseException | None = None) -> bool:
        return True


class DuckMetrics:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Any]] = []

    def record_cost(self, agent_id: str, cost: float) -> None:
        self.seen.append(("cost", cost))

    def record_decision(self, agent_id: str, decision: str) -> None:
        self.seen.append(("decision", decision))


@pytest.mark.parametrize(
    ("kwargs", "argument", "method"),
    [
        ({"pipeline": 5}, "pipeline", "before_llm_call"),
        ({"pipeline": NoEvents()}, "pipeline", "get_events"),
        ({"pipeline": "x"}, "pipeline", "before_llm_call"),
        ({"circuit_breaker": object()}, "circuit_breaker", "check"),
        ({"circuit_breaker": ShieldPipeline()}, "circuit_breaker", "check"),
        ({"metrics": 1.5}, "metrics", "record_cost"),
        ({"metrics": type("M", (), {"record_cost": lambda *a: None})()}, "metrics", "record_decision"),
        ({"metrics": type("M", (), {"record_cost": 1, "record_decision": 2})()}, "metrics", "record_cost"),
    ],
)
def test_collaborators_missing_a_method_are_refused(
    kwargs: dict[str, Any], argument: str, method: str
) -> None:
    with pytest.raises(TypeError, match=rf"^{argument} must provide a callable {method}\(\)"):
        ExecutionContext(config(timeout_ms=50), **kwargs)


def test_duck_typed_collaborators_with_the_methods_are_accepted() -> None:
    metrics = DuckMetrics()
    ctx = ExecutionContext(config(), pipeline=DuckPipeline(), circuit_breaker=DuckBreaker(), metrics=metrics)
    assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.25)) is Decision.ALLOW
    assert metrics.seen == [("cost", 0.25), ("decision", "ALLOW")]


def test_reference_collaborators_are_accepted() -> None:
    ctx = ExecutionContext(config(), pipeline=RefPipeline(), circuit_breaker=RefBreaker())
    assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW


def test_failing_metrics_are_logged_and_do_not_change_the_outcome(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def record_cost(self, agent_id: str, cost: float) -> None:
            raise RuntimeError("metrics backend down")

        def record_decision(self, agent_id: str, decision: str) -> None:
            raise ValueError("bad label")

    caplog.set_level(logging.WARNING, logger="chainwarden.containment")
    broken = ExecutionContext(config(max_steps=1), metrics=Broken())
    plain = ExecutionContext(config(max_steps=1))
    for ctx in (broken, plain):
        assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.5)) is Decision.ALLOW
        assert ctx.wrap_llm_call(lambda: None) is Decision.HALT  # step limit
    a, b = broken.get_snapshot(), plain.get_snapshot()
    assert (a.step_count, a.cost_usd_accumulated, a.retries_used, [n.status for n in a.nodes]) == (
        b.step_count,
        b.cost_usd_accumulated,
        b.retries_used,
        [n.status for n in b.nodes],
    )
    messages = [r.getMessage() for r in caplog.records if r.name == "chainwarden.containment"]
    assert any("Broken.record_cost" in m and "metrics backend down" in m for m in messages), messages
    assert any("Broken.record_decision" in m and "bad label" in m for m in messages), messages
    assert all(r.levelno == logging.WARNING for r in caplog.records if "metrics hook" in r.getMessage())


def test_metrics_wrapper_exposes_only_the_methods_the_object_has() -> None:
    class WithTokens(DuckMetrics):
        def record_tokens(self, agent_id: str, tokens_in: int, tokens_out: int) -> None:
            self.seen.append(("tokens", (tokens_in, tokens_out)))

    ctx = ExecutionContext(config(), metrics=WithTokens())
    wrapped = ctx._s.metrics
    assert hasattr(wrapped, "record_tokens") and not hasattr(wrapped, "record_latency")
    wrapped.record_tokens("c", 1, 2)
    assert ("tokens", (1, 2)) in wrapped.inner.seen


# -- numeric bounds -------------------------------------------------------------------------------

BAD_CONFIG = [
    ("max_steps", 2**64, ValueError),
    ("max_steps", MAX_COUNT + 1, ValueError),
    ("max_steps", -1, ValueError),
    ("max_steps", True, TypeError),
    ("max_steps", 1.0, TypeError),
    ("max_retries_total", 2**63, ValueError),
    ("max_retries_total", False, TypeError),
    ("max_retries_total", "3", TypeError),
    ("timeout_ms", MAX_TIMEOUT_MS + 1, ValueError),
    ("timeout_ms", -5, ValueError),
    ("timeout_ms", True, TypeError),
    ("timeout_ms", 10.0, TypeError),
    ("max_cost_usd", float("nan"), ValueError),
    ("max_cost_usd", float("inf"), ValueError),
    ("max_cost_usd", -0.01, ValueError),
    ("max_cost_usd", 10**400, ValueError),
    ("max_cost_usd", True, TypeError),
    ("max_cost_usd", "1", TypeError),
]


@pytest.mark.parametrize(("field", "value", "error"), BAD_CONFIG)
def test_config_bounds_are_checked_at_construction(field: str, value: object, error: type[Exception]) -> None:
    with pytest.raises(error, match=field):
        config(**{field: value})


BAD_OPTIONS = [
    ("timeout_ms", MAX_TIMEOUT_MS + 1, ValueError),
    ("timeout_ms", True, TypeError),
    ("retry_policy_override", 2**63, ValueError),
    ("retry_policy_override", -1, ValueError),
    ("cost_estimate_hint", float("nan"), ValueError),
    ("cost_estimate_hint", float("-inf"), ValueError),
    ("cost_estimate_hint", 10**400, ValueError),
    ("cost_estimate_hint", False, TypeError),
]


@pytest.mark.parametrize(("field", "value", "error"), BAD_OPTIONS)
def test_wrap_option_bounds_are_checked_at_construction(
    field: str, value: object, error: type[Exception]
) -> None:
    with pytest.raises(error, match=field):
        WrapOptions(**{field: value})


GOOD_CONFIGS = [
    dict(max_cost_usd=0.0, max_steps=0, max_retries_total=0),
    dict(max_cost_usd=0, max_steps=MAX_COUNT, max_retries_total=MAX_COUNT, timeout_ms=MAX_TIMEOUT_MS),
    dict(max_cost_usd=1e300, max_steps=1, max_retries_total=1, timeout_ms=60_000),
    dict(max_cost_usd=5, max_steps=100, max_retries_total=10, timeout_ms=30_000),
]


@pytest.mark.parametrize("kwargs", GOOD_CONFIGS)
def test_values_the_reference_accepts_within_the_bounds_stay_accepted(kwargs: dict[str, Any]) -> None:
    RefConfig(**kwargs)  # the oracle takes them too
    cfg = ExecutionConfig(**kwargs)
    with ExecutionContext(cfg) as ctx:
        admits = kwargs["max_steps"] and kwargs["max_cost_usd"] and kwargs["max_retries_total"]
        expected = Decision.ALLOW if admits else Decision.HALT
        assert ctx.wrap_llm_call(lambda: None) is expected
    RefOptions(cost_estimate_hint=2, timeout_ms=MAX_TIMEOUT_MS)
    assert WrapOptions(cost_estimate_hint=2, timeout_ms=MAX_TIMEOUT_MS).cost_estimate_hint == 2.0


def test_max_steps_of_2_64_is_refused_before_anything_else_happens() -> None:
    with pytest.raises(ValueError, match=r"max_steps must be <= 9223372036854775807"):
        ExecutionConfig(max_cost_usd=1.0, max_steps=2**64, max_retries_total=0)
