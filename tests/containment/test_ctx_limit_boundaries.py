"""Every limit of docs/containment.md at `limit - 1`, `limit` and `limit + 1` calls (docs/testing.md
"Boundary tests"): the call that reaches a limit is the last one allowed, the next the first refused."""

import pytest
from ctx_helpers import Calls, assert_stop, stop_events

from chainwarden.containment import ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.shield import Decision

LIMIT = 3


def config(**overrides: object) -> ExecutionConfig:
    values: dict[str, object] = {"max_cost_usd": 100.0, "max_steps": 100, "max_retries_total": 100}
    values.update(overrides)
    return ExecutionConfig(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("calls", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_step_limit(calls: int) -> None:
    ctx = ExecutionContext(config(max_steps=LIMIT))
    fn = Calls()
    decisions = [ctx.wrap_llm_call(fn) for _ in range(calls)]
    allowed = min(calls, LIMIT)
    assert decisions == [Decision.ALLOW] * allowed + [Decision.HALT] * (calls - allowed)
    assert fn.count == allowed
    assert ctx.get_snapshot().step_count == allowed
    if calls > LIMIT:
        assert_stop(ctx, "step_limit_exceeded")
    else:
        assert stop_events(ctx) == []
        assert not ctx.get_snapshot().aborted


@pytest.mark.parametrize("failures", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_retry_limit(failures: int) -> None:
    """docs/design.md §34: `max_retries_total` failures are each retried; the failure that finds no
    unit left halts the chain (`provider_error`), and only then are later calls refused
    (`retry_budget_exceeded`). A call made after the last unit was taken still runs."""
    ctx = ExecutionContext(config(max_retries_total=LIMIT))
    failing = Calls(ConnectionError("provider down"))
    decisions = [ctx.wrap_llm_call(failing) for _ in range(failures)]
    retried = min(failures, LIMIT)
    expected = [Decision.RETRY] * retried + [Decision.HALT] * (failures - retried)
    assert decisions == expected
    assert failing.count == failures
    assert ctx.get_snapshot().retries_used == min(failures, LIMIT)
    events = stop_events(ctx)
    if failures <= LIMIT:
        assert events == []
        assert ctx.wrap_llm_call(Calls()) is Decision.ALLOW, "a retry that succeeds is not refused"
    else:
        assert events == ["provider_error"]
        refused = Calls()
        assert ctx.wrap_llm_call(refused) is Decision.HALT
        assert refused.count == 0
        assert stop_events(ctx) == ["provider_error", "retry_budget_exceeded"]


@pytest.mark.parametrize("calls", [LIMIT - 1, LIMIT, LIMIT + 1])
def test_cost_limit_by_spent_cost(calls: int) -> None:
    """Each call spends 0.25 (exact in binary) of a 0.75 budget: the third reaches it exactly."""
    ctx = ExecutionContext(config(max_cost_usd=0.25 * LIMIT))
    fn = Calls()
    decisions = [ctx.wrap_llm_call(fn, WrapOptions(cost_estimate_hint=0.25)) for _ in range(calls)]
    allowed = min(calls, LIMIT)
    assert decisions == [Decision.ALLOW] * allowed + [Decision.HALT] * (calls - allowed)
    assert fn.count == allowed
    assert ctx.get_snapshot().cost_usd_accumulated == 0.25 * allowed
    if calls > LIMIT:
        assert_stop(ctx, "budget_exceeded")
    else:
        assert stop_events(ctx) == []


# The core compares costs with a 1e-9 tolerance (`BUDGET_EPSILON` in rust/core/src/containment/chain.rs) so
# that 0.2 + 0.1 fits under 0.3: the boundary is `max_cost_usd + 1e-9`, and the cases sit either side of it.
@pytest.mark.parametrize(
    ("estimate", "allowed"),
    [
        (0.5 - 1e-9, True),  # just under what is left
        (0.5, True),  # exactly what is left: spent + reserved + estimate <= max_cost_usd
        (0.5 + 1e-9, True),  # exactly at the tolerance (0.5 + this == 1.0 + 1e-9 in floats)
        (0.5 + 1e-8, False),  # just over
    ],
)
def test_cost_preflight_at_the_remaining_budget(estimate: float, allowed: bool) -> None:
    ctx = ExecutionContext(config(max_cost_usd=1.0))
    assert ctx.wrap_llm_call(Calls(), WrapOptions(cost_estimate_hint=0.5)) is Decision.ALLOW
    fn = Calls()
    decision = ctx.wrap_llm_call(fn, WrapOptions(cost_estimate_hint=estimate))
    assert decision is (Decision.ALLOW if allowed else Decision.HALT)
    assert fn.count == int(allowed)
    if allowed:
        assert stop_events(ctx) == []
        assert ctx.get_snapshot().cost_usd_accumulated == 0.5 + estimate
    else:
        assert_stop(ctx, "budget_exceeded")
        assert ctx.get_snapshot().cost_usd_accumulated == 0.5


@pytest.mark.parametrize(
    ("spent", "refused"),
    [(0.75 - 2e-9, False), (0.75 - 1e-9, True), (0.75, True)],
)
def test_spent_cost_at_the_ceiling(spent: float, refused: bool) -> None:
    """The ceiling counts as reached once `spent + 1e-9 >= max_cost_usd`."""
    ctx = ExecutionContext(config(max_cost_usd=0.75))
    assert ctx.wrap_llm_call(Calls(), WrapOptions(cost_estimate_hint=spent)) is Decision.ALLOW
    fn = Calls()
    decision = ctx.wrap_tool_call(fn)
    assert decision is (Decision.HALT if refused else Decision.ALLOW)
    assert fn.count == int(not refused)
    if refused:
        assert_stop(ctx, "budget_exceeded")
    else:
        assert stop_events(ctx) == []


def test_zero_limits_refuse_the_first_call() -> None:
    for overrides, reason in [
        ({"max_steps": 0}, "step_limit_exceeded"),
        ({"max_cost_usd": 0.0}, "budget_exceeded"),
    ]:
        ctx = ExecutionContext(config(**overrides))
        fn = Calls()
        assert ctx.wrap_tool_call(fn) is Decision.HALT, overrides
        assert fn.count == 0
        assert_stop(ctx, reason)
