"""Every stop reason of docs/design.md §5: HALT without running the callable, one SafetyEvent, a halt node."""

import threading

from ctx_helpers import Calls, assert_stop, stop_events

from chainwarden.containment import STOP_REASONS, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import BudgetWindowHook, CircuitBreaker, Decision, ShieldPipeline


def config(**overrides: object) -> ExecutionConfig:
    values: dict[str, object] = {"max_cost_usd": 1.0, "max_steps": 100, "max_retries_total": 10}
    values.update(overrides)
    return ExecutionConfig(**values)  # type: ignore[arg-type]


def test_taxonomy_is_the_seed_table() -> None:
    assert frozenset(STOP_REASONS) == {
        "budget_exceeded",
        "retry_budget_exceeded",
        "circuit_open",
        "step_limit_exceeded",
        "timeout",
        "aborted",
        "provider_rate_limit",
        "provider_error",
    }


def test_budget_exceeded_after_ceiling_reached() -> None:
    ctx = ExecutionContext(config(max_cost_usd=0.75))
    for _ in range(3):
        assert ctx.wrap_llm_call(lambda: None, WrapOptions(cost_estimate_hint=0.25)) is Decision.ALLOW
    fn = Calls()
    assert ctx.wrap_llm_call(fn) is Decision.HALT
    assert ctx.wrap_tool_call(fn) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "budget_exceeded")
    assert ctx.get_snapshot().step_count == 3


def test_budget_exceeded_by_cost_estimate_preflight() -> None:
    ctx = ExecutionContext(config(max_cost_usd=1.0))
    fn = Calls()
    assert ctx.wrap_llm_call(fn, WrapOptions(cost_estimate_hint=1.5)) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "budget_exceeded")
    # The pre-flight refusal spent nothing: a cheaper call still runs.
    assert ctx.wrap_llm_call(fn, WrapOptions(cost_estimate_hint=0.5)) is Decision.ALLOW
    assert fn.count == 1


def test_step_limit_exceeded() -> None:
    ctx = ExecutionContext(config(max_steps=2))
    fn = Calls()
    assert [ctx.wrap_llm_call(fn) for _ in range(4)] == [
        Decision.ALLOW,
        Decision.ALLOW,
        Decision.HALT,
        Decision.HALT,
    ]
    assert fn.count == 2
    assert_stop(ctx, "step_limit_exceeded")


def test_retry_budget_exceeded_when_budget_is_zero() -> None:
    """docs/design.md §34: with no retries, calls still run; the first failure stops the chain."""
    ctx = ExecutionContext(config(max_retries_total=0))
    ok = Calls()
    assert ctx.wrap_tool_call(ok) is Decision.ALLOW
    assert ctx.wrap_tool_call(Calls(ConnectionError("down"))) is Decision.HALT
    assert_stop(ctx, "provider_error")
    fn = Calls()
    assert ctx.wrap_tool_call(fn) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "retry_budget_exceeded")


def test_provider_error_when_a_failure_finds_the_retry_budget_spent() -> None:
    ctx = ExecutionContext(config(max_retries_total=2))
    failing = Calls(ConnectionError("provider down"))
    assert ctx.wrap_llm_call(failing) is Decision.RETRY
    assert ctx.wrap_llm_call(failing) is Decision.RETRY
    assert ctx.get_snapshot().retries_used == 2
    assert stop_events(ctx) == []
    assert ctx.wrap_llm_call(failing) is Decision.HALT
    assert_stop(ctx, "provider_error")
    assert ctx.get_snapshot().retries_used == 2
    # Later calls are refused by the spent budget without running.
    fn = Calls()
    assert ctx.wrap_llm_call(fn) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "retry_budget_exceeded")


def test_circuit_open() -> None:
    breaker = CircuitBreaker(failure_threshold=2, recovery_timeout=3600)
    ctx = ExecutionContext(config(), circuit_breaker=breaker)
    failing = Calls(TimeoutError())
    assert ctx.wrap_llm_call(failing) is Decision.RETRY
    assert ctx.wrap_llm_call(failing) is Decision.RETRY
    fn = Calls()
    assert ctx.wrap_llm_call(fn) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "circuit_open")


def test_provider_rate_limit() -> None:
    window = BudgetWindowHook(max_calls=2, window_seconds=3600, degrade_threshold=1.0)
    ctx = ExecutionContext(config(), pipeline=ShieldPipeline(pre_dispatch=window))
    fn = Calls()
    assert [ctx.wrap_llm_call(fn) for _ in range(3)] == [Decision.ALLOW, Decision.ALLOW, Decision.HALT]
    assert fn.count == 2
    assert_stop(ctx, "provider_rate_limit")
    assert any(e.hook == "BudgetWindowHook" for e in ctx.get_snapshot().events)


def test_aborted() -> None:
    ctx = ExecutionContext(config())
    ctx.abort("user pressed stop")
    ctx.abort("second abort is ignored")
    fn = Calls()
    assert ctx.wrap_llm_call(fn) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "aborted")
    snap = ctx.get_snapshot()
    assert snap.aborted
    assert snap.abort_reason == "user pressed stop"
    assert snap.nodes[-1].status == "aborted"
    assert ctx.cancellation_token.is_cancelled


def test_timeout() -> None:
    ctx = ExecutionContext(config(timeout_ms=1))
    assert ctx.cancellation_token.wait(30)
    fn = Calls()
    assert ctx.wrap_llm_call(fn) is Decision.HALT
    assert fn.count == 0
    assert_stop(ctx, "timeout")
    assert ctx.get_snapshot().nodes[-1].status == "timeout"


def test_sync_callable_sees_cancellation_and_its_failure_is_the_timeout() -> None:
    ctx = ExecutionContext(config(timeout_ms=20))
    observed = threading.Event()

    def cooperative() -> None:
        if ctx.cancellation_token.wait(30):
            observed.set()
            raise RuntimeError("cancelled by the chain")

    assert ctx.wrap_llm_call(cooperative) is Decision.HALT
    assert observed.is_set()
    snap = ctx.get_snapshot()
    assert snap.nodes[-1].status == "timeout"
    assert snap.retries_used == 0  # a cancellation is not the provider's failure
    assert_stop(ctx, "timeout")


def test_partial_result_snapshot_is_taken_before_the_first_forced_stop() -> None:
    ctx = ExecutionContext(config(max_steps=2))
    assert ctx.stop_snapshot is None
    ctx.wrap_llm_call(lambda: None, WrapOptions("first", 0.1))
    ctx.wrap_llm_call(lambda: None, WrapOptions("second", 0.1))
    ctx.wrap_llm_call(lambda: None, WrapOptions("refused"))
    ctx.wrap_llm_call(lambda: None, WrapOptions("refused again"))
    before = ctx.stop_snapshot
    assert before is not None
    # The state at the stop: both results, and the refused call that marks where it happened.
    assert [n.operation_name for n in before.nodes] == ["first", "second", "refused"]
    assert before.nodes[-1].status == "halted"
    assert before.step_count == 2
    assert before.cost_usd_accumulated == 0.2
    assert not [e for e in before.events if e.hook == "ExecutionContext"]
    assert len(ctx.get_snapshot().nodes) == 4


def test_closed_context_refuses_without_an_event() -> None:
    with ExecutionContext(config()) as ctx:
        assert ctx.wrap_llm_call(lambda: None) is Decision.ALLOW
    assert ctx.wrap_llm_call(lambda: None) is Decision.HALT
    snap = ctx.get_snapshot()
    assert snap.aborted
    assert snap.abort_reason == "context_closed"
    assert snap.events == ()
    ctx.close()  # idempotent
