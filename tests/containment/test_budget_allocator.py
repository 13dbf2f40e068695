"""Budget allocators: deterministic, exact sums whatever the budget, names, weights or usage, shares within a
unit of the budget's last digit of their exact value, floors never rounded below their guarantee, and the
reference's allocations where it is exact (docs/containment.md "Child chains")."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st
from veronica_core.containment.budget_allocator import DynamicAllocator as RefDynamic
from veronica_core.containment.budget_allocator import FairShareAllocator as RefFair
from veronica_core.containment.budget_allocator import WeightedAllocator as RefWeighted

from chainwarden.containment import (
    AllocationResult,
    BudgetAllocator,
    DynamicAllocator,
    ExecutionConfig,
    ExecutionContext,
    FairShareAllocator,
    WeightedAllocator,
)

budgets = st.one_of(
    st.floats(min_value=0.0, max_value=1e12, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.1, 0.3, 1.0, 1e-300, 5e-324, 1.7976931348623157e308]),
)
names = st.lists(st.text(min_size=1, max_size=6), min_size=1, max_size=40, unique=True)
amounts = st.floats(min_value=0.0, max_value=1e6, allow_nan=False, allow_infinity=False)


def exact_invariants(result: AllocationResult, total: float, agents: list[str]) -> None:
    shares = list(result.allocations.values())
    assert list(result.allocations) == agents
    assert all(s >= 0.0 for s in shares)
    # Exact with ==, in any order and with any summation algorithm.
    assert sum(shares) == result.total_allocated == math.fsum(shares) == sum(reversed(shares))
    assert result.total_allocated + result.total_remaining == total
    assert result.total_allocated == total


def within_a_unit(result: AllocationResult, total: float, exact: list[Fraction]) -> None:
    unit = Fraction(math.ulp(total))
    for share, ideal in zip(result.allocations.values(), exact, strict=True):
        assert abs(Fraction(share) - ideal) < unit


@given(budgets, names)
def test_fair_shares_are_exact_and_equal_to_a_unit(total: float, agents: list[str]) -> None:
    result = FairShareAllocator().allocate(total, agents, {})
    exact_invariants(result, total, agents)
    within_a_unit(result, total, [Fraction(total) / len(agents)] * len(agents))
    assert FairShareAllocator().allocate(total, agents, {}) == result  # deterministic


@given(budgets, names, st.data())
def test_weighted_shares_are_exact(total: float, agents: list[str], data: st.DataObject) -> None:
    weights = {a: data.draw(amounts) for a in agents if data.draw(st.booleans())}
    result = WeightedAllocator(weights).allocate(total, agents, {})
    exact_invariants(result, total, agents)
    raw = [Fraction(weights.get(a, 0.0)) for a in agents]
    if not any(raw):
        raw = [Fraction(1)] * len(agents)
    within_a_unit(result, total, [Fraction(total) * w / sum(raw) for w in raw])
    assert all(result.allocations[a] == 0.0 for a in agents if any(weights.values()) and not weights.get(a))


@given(budgets, names, st.floats(min_value=0.0, max_value=0.99), st.data())
def test_dynamic_shares_are_exact_and_keep_their_floor(
    total: float, agents: list[str], min_share: float, data: st.DataObject
) -> None:
    usage = {a: data.draw(amounts) for a in agents if data.draw(st.booleans())}
    result = DynamicAllocator(min_share).allocate(total, agents, usage)
    exact_invariants(result, total, agents)
    floor = Fraction(min_share) * Fraction(total)
    units = Fraction(total) / Fraction(math.ulp(total)) if total else Fraction(0)
    if len(agents) * math.ceil(Fraction(min_share) * units) <= units:  # the floors fit in whole units
        assert all(Fraction(s) >= floor for s in result.allocations.values())


@pytest.mark.parametrize(
    ("ours", "ref", "usage"),
    [
        (FairShareAllocator(), RefFair(), {}),
        (WeightedAllocator({"planner": 2, "executor": 1}), RefWeighted({"planner": 2, "executor": 1}), {}),
        (DynamicAllocator(0.0), RefDynamic(0.0), {"planner": 0.1, "executor": 0.3}),
        (DynamicAllocator(0.2), RefDynamic(0.2), {"planner": 1.0}),
        (DynamicAllocator(), RefDynamic(), {}),
    ],
)
def test_the_reference_allocations_within_a_unit(
    ours: BudgetAllocator, ref: object, usage: dict[str, float]
) -> None:
    agents = ["planner", "executor", "validator"]
    mine = ours.allocate(0.9, agents, usage)
    theirs = ref.allocate(0.9, agents, usage)  # type: ignore[attr-defined]
    for a in agents:
        assert mine.allocations[a] == pytest.approx(theirs.allocations[a], abs=2 * math.ulp(0.9))
    assert isinstance(ours, BudgetAllocator)


def test_nothing_to_share() -> None:
    for allocator in (FairShareAllocator(), WeightedAllocator({"a": 1.0}), DynamicAllocator()):
        empty = allocator.allocate(1.0, [], {})
        assert (dict(empty.allocations), empty.total_allocated, empty.total_remaining) == ({}, 0.0, 1.0)
        zero = allocator.allocate(0.0, ["a", "b"], {"a": 1.0})
        assert (dict(zero.allocations), zero.total_remaining) == ({"a": 0.0, "b": 0.0}, 0.0)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (
            lambda: FairShareAllocator().allocate(-1.0, ["a"], {}),
            ValueError,
            "total_budget must be non-negative",
        ),
        (
            lambda: FairShareAllocator().allocate(math.nan, ["a"], {}),
            ValueError,
            "total_budget must be finite",
        ),
        (
            lambda: FairShareAllocator().allocate(math.inf, ["a"], {}),
            ValueError,
            "total_budget must be finite",
        ),
        (lambda: FairShareAllocator().allocate("1", ["a"], {}), TypeError, "total_budget must be a number"),
        (lambda: FairShareAllocator().allocate(1.0, ["a", "a"], {}), ValueError, "must not repeat"),
        (lambda: FairShareAllocator().allocate(1.0, "ab", {}), TypeError, "agent_names must be a list"),
        (lambda: FairShareAllocator().allocate(1.0, [1], {}), TypeError, "agent_names must hold str"),
        (lambda: DynamicAllocator().allocate(1.0, ["a"], {"a": -0.5}), ValueError, r"current_usage\['a'\]"),
        (lambda: DynamicAllocator().allocate(1.0, ["a"], {"a": math.nan}), ValueError, "finite"),
        (lambda: DynamicAllocator().allocate(1.0, ["a"], []), TypeError, "current_usage must be a mapping"),
        (lambda: WeightedAllocator({"a": math.nan}), ValueError, "non-negative finite"),
        (lambda: WeightedAllocator({"a": -1.0}), ValueError, "non-negative finite"),
        (lambda: WeightedAllocator({1: 1.0}), TypeError, "weights keys must be str"),
        (lambda: DynamicAllocator(1.0), ValueError, r"min_share must be in \[0.0, 1.0\)"),
        (lambda: DynamicAllocator(-0.1), ValueError, "min_share"),
    ],
)
def test_bad_input_is_refused_naming_it(call: object, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        call()  # type: ignore[operator]


def test_a_result_is_read_only() -> None:
    result = FairShareAllocator().allocate(1.0, ["a"], {})
    with pytest.raises(TypeError):
        result.allocations["a"] = 2.0  # type: ignore[index]
    with pytest.raises(AttributeError):
        result.total_allocated = 0.0  # type: ignore[misc]


def test_create_child_shares_the_remaining_budget_by_its_allocator() -> None:
    parent = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=1))
    fair = parent.create_child("a", ["a", "b", "c"])
    weighted = parent.create_child(
        "planner", ["planner", "executor"], WeightedAllocator({"planner": 3, "executor": 1})
    )
    assert (
        fair.config.max_cost_usd == FairShareAllocator().allocate(1.0, ["a", "b", "c"], {}).allocations["a"]
    )
    assert weighted.config.max_cost_usd == 0.75
    with pytest.raises(ValueError, match="must be present in agent_names"):
        parent.create_child("z", ["a"])
