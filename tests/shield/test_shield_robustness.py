"""Shield hooks that raise are logged on chainwarden.shield and fail closed; constructors check what
they are given (docs/design.md §22)."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import BudgetWindowHook, CircuitBreaker, CircuitState, Decision, ShieldPipeline
from chainwarden.shield.budget_window import MAX_CALLS
from chainwarden.shield.types import ToolCallContext

CTX = ToolCallContext(request_id="r1")


class Raising:
    def before_llm_call(self, ctx: ToolCallContext) -> Decision:
        raise RuntimeError("pre bug")

    def before_tool_call(self, ctx: ToolCallContext) -> Decision:
        raise LookupError("tool bug")

    def before_egress(self, ctx: ToolCallContext, url: str, method: str) -> Decision:
        raise OSError("egress bug")

    def on_error(self, ctx: ToolCallContext, err: BaseException) -> Decision:
        raise TypeError("retry bug")

    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision:
        raise ArithmeticError("charge bug")


class Halting:
    def before_llm_call(self, ctx: ToolCallContext) -> Decision:
        return Decision.HALT

    def before_charge(self, ctx: ToolCallContext, cost_usd: float) -> Decision:
        return Decision.HALT

    def on_error(self, ctx: ToolCallContext, err: BaseException) -> Decision:
        return Decision.HALT


def every_boundary(pipeline: ShieldPipeline) -> list[Decision]:
    return [
        pipeline.before_llm_call(CTX),
        pipeline.before_tool_call(CTX),
        pipeline.before_egress(CTX, "https://example.com", "GET"),
        pipeline.on_error(CTX, ValueError("provider")),
        pipeline.before_charge(CTX, 0.5),
    ]


def test_raising_hooks_fail_closed_with_a_warning_naming_hook_and_exception(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="chainwarden.shield")
    h = Raising()
    pipeline = ShieldPipeline(pre_dispatch=h, egress=h, retry=h, budget=h, tool_dispatch=h)
    assert every_boundary(pipeline) == [Decision.HALT] * 5
    messages = [r.getMessage() for r in caplog.records if r.name == "chainwarden.shield"]
    assert messages == [
        "shield hook Raising.before_llm_call raised RuntimeError('pre bug')",
        "shield hook Raising.before_tool_call raised LookupError('tool bug')",
        "shield hook Raising.before_egress raised OSError('egress bug')",
        "shield hook Raising.on_error raised TypeError('retry bug')",
        "shield hook Raising.before_charge raised ArithmeticError('charge bug')",
    ]
    assert all(r.levelno == logging.WARNING and r.exc_info for r in caplog.records)
    events = pipeline.get_events()
    assert [(e.event_type, e.hook, e.decision) for e in events] == [
        ("HOOK_ERROR", "Raising", Decision.HALT)
    ] * 5
    assert events[0].reason == "before_llm_call raised RuntimeError: pre bug"


def test_a_hook_answering_something_that_is_not_a_decision_fails_closed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Garbage:
        def before_llm_call(self, ctx: ToolCallContext) -> object:
            return "MAYBE"

    caplog.set_level(logging.WARNING, logger="chainwarden.shield")
    assert ShieldPipeline(pre_dispatch=Garbage()).before_llm_call(CTX) is Decision.HALT  # type: ignore[arg-type]
    assert "Garbage.before_llm_call raised ValueError" in caplog.records[0].getMessage()


def test_a_raising_hook_leaves_the_chain_as_a_halting_hook_would(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="chainwarden.shield")

    def run(hook: object) -> ExecutionContext:
        ctx = ExecutionContext(
            ExecutionConfig(max_cost_usd=1.0, max_steps=5, max_retries_total=2),
            pipeline=ShieldPipeline(pre_dispatch=hook, retry=hook, budget=hook),  # type: ignore[arg-type]
        )
        assert ctx.wrap_llm_call(lambda: None) is Decision.HALT  # no exception reaches the caller
        assert ctx.wrap_tool_call(lambda: None, WrapOptions(cost_estimate_hint=0.1)) is Decision.ALLOW
        return ctx

    broken, halting = run(Raising()), run(Halting())
    a, b = broken.get_snapshot(), halting.get_snapshot()
    assert (a.step_count, a.cost_usd_accumulated, a.retries_used, a.aborted) == (
        b.step_count,
        b.cost_usd_accumulated,
        b.retries_used,
        b.aborted,
    )
    assert [(n.kind, n.status) for n in a.nodes] == [(n.kind, n.status) for n in b.nodes]
    assert broken._s.core.in_flight == 0
    assert any("Raising.before_llm_call" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("argument", "method"),
    [
        ("pre_dispatch", "before_llm_call"),
        ("egress", "before_egress"),
        ("retry", "on_error"),
        ("budget", "before_charge"),
        ("tool_dispatch", "before_tool_call"),
    ],
)
def test_pipeline_hooks_without_their_method_are_refused(argument: str, method: str) -> None:
    with pytest.raises(TypeError, match=rf"^{argument} must provide a callable {method}\(\)"):
        ShieldPipeline(**{argument: object()})
    ShieldPipeline(**{argument: Raising()})  # duck-typed hooks with the method are fine


def test_broken_failure_predicate_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def predicate(err: BaseException) -> bool:
        raise RuntimeError("predicate bug")

    caplog.set_level(logging.WARNING, logger="chainwarden.shield")
    breaker = CircuitBreaker(failure_threshold=1, failure_predicate=predicate)
    assert breaker.record_failure(error=OSError()) is True
    assert breaker.state is CircuitState.OPEN
    (record,) = caplog.records
    assert record.levelno == logging.WARNING and "predicate bug" in record.getMessage()
    assert "failure_predicate" in record.getMessage()


BAD_BREAKERS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"failure_threshold": 0}, ValueError, "failure_threshold"),
    ({"failure_threshold": 2**63}, ValueError, "failure_threshold"),
    ({"failure_threshold": True}, TypeError, "failure_threshold"),
    ({"recovery_timeout": float("nan")}, ValueError, "recovery_timeout"),
    ({"recovery_timeout": 10**400}, ValueError, "recovery_timeout"),
    ({"recovery_timeout": -1}, ValueError, "recovery_timeout"),
    ({"recovery_timeout": "60"}, TypeError, "recovery_timeout"),
    ({"failure_predicate": 5}, TypeError, "failure_predicate"),
    ({"clock": 1.0}, TypeError, "clock"),
]


@pytest.mark.parametrize(("kwargs", "error", "field"), BAD_BREAKERS)
def test_circuit_breaker_arguments_are_checked(
    kwargs: dict[str, Any], error: type[Exception], field: str
) -> None:
    with pytest.raises(error, match=field):
        CircuitBreaker(**kwargs)


BAD_WINDOWS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"max_calls": MAX_CALLS + 1}, ValueError, "max_calls"),
    ({"max_calls": 0}, ValueError, "max_calls"),
    ({"max_calls": 1, "window_seconds": float("inf")}, ValueError, "window_seconds"),
    ({"max_calls": 1, "window_seconds": 10**400}, ValueError, "window_seconds"),
    ({"max_calls": 1, "degrade_threshold": float("nan")}, ValueError, "degrade_threshold"),
    ({"max_calls": 1, "clock": "now"}, TypeError, "clock"),
]


@pytest.mark.parametrize(("kwargs", "error", "field"), BAD_WINDOWS)
def test_budget_window_arguments_are_checked(
    kwargs: dict[str, Any], error: type[Exception], field: str
) -> None:
    with pytest.raises(error, match=field):
        BudgetWindowHook(**kwargs)


def test_the_largest_window_is_usable() -> None:
    hook = BudgetWindowHook(MAX_CALLS, window_seconds=1e300)
    assert hook.before_llm_call(CTX) is None
    assert hook.count() == 1


def test_an_exception_that_cannot_be_printed_still_fails_closed(caplog: pytest.LogCaptureFixture) -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")

        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Hook:
        def before_llm_call(self, ctx: ToolCallContext) -> Decision:
            raise Unprintable

    caplog.set_level(logging.CRITICAL, logger="chainwarden.shield")  # the record itself cannot be formatted
    pipeline = ShieldPipeline(pre_dispatch=Hook())  # type: ignore[arg-type]
    assert pipeline.before_llm_call(CTX) is Decision.HALT
    assert pipeline.get_events()[0].reason == "before_llm_call raised Unprintable"
