"""Budget allocators: how ``ExecutionContext.create_child`` shares a parent's remaining budget among agents
(docs/containment.md "Child chains"; exact sums: docs/design.md §44).

Every allocator here is deterministic and exact: the shares are whole multiples of the budget's last
binary digit (``math.ulp(total_budget)``), apportioned from the exact rational shares by largest
remainder (ties go to the agent named first), so every partial sum is exact and, whatever the order or
summation algorithm, ``sum(allocations.values()) == total_allocated`` and ``total_allocated +
total_remaining == total_budget`` hold with ``==``. No share differs from its exact value by a unit or
more of that digit, and a ``DynamicAllocator`` floor is never rounded below its guarantee (unless the
floors of all agents would not fit in whole units: then everyone gets the same floor, one unit less).

Bad input raises, naming the argument: a budget or usage that is not a finite number >= 0, a name that is
not a ``str``, the same name twice (docs/design.md §4; the reference clamps or propagates such values).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from types import MappingProxyType
from typing import Protocol, runtime_checkable

from chainwarden._args import finite_non_negative
from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "AllocationResult",
    "BudgetAllocator",
    "DynamicAllocator",
    "FairShareAllocator",
    "WeightedAllocator",
]

# The reference's threshold below which recorded usage is float noise, not a signal (equal split then).
_NO_USAGE = 1e-12


@dataclass(frozen=True)
class AllocationResult:
    """One allocation: budget per agent (read-only, in ``agent_names`` order), their sum, and what is
    left of the total."""

    allocations: Mapping[str, float]
    total_allocated: float
    total_remaining: float

    def __post_init__(self) -> None:
        if not isinstance(self.allocations, Mapping):
            raise InvalidArgumentType(
                f"allocations must be a mapping, got {type(self.allocations).__name__}",
                argument="allocations",
            )
        object.__setattr__(self, "allocations", MappingProxyType(dict(self.allocations)))


@runtime_checkable
class BudgetAllocator(Protocol):
    """Shares ``total_budget`` among ``agent_names``; ``current_usage`` is what each spent so far (absent
    agents spent 0). Must be deterministic, thread-safe and leave its arguments unchanged."""

    def allocate(
        self, total_budget: float, agent_names: list[str], current_usage: dict[str, float]
    ) -> AllocationResult: ...


def _names(agent_names: object) -> list[str]:
    if isinstance(agent_names, str | bytes) or not isinstance(agent_names, Sequence):
        raise InvalidArgumentType(
            f"agent_names must be a list of str, got {type(agent_names).__name__}", argument="agent_names"
        )
    names = list(agent_names)
    for name in names:
        if not isinstance(name, str):
            raise InvalidArgumentType(
                f"agent_names must hold str, got {type(name).__name__}", argument="agent_names"
            )
    if len(set(names)) != len(names):
        duplicates = sorted({n for n in names if names.count(n) > 1})
        raise InvalidArgument(
            f"agent_names must not repeat a name, got {duplicates} more than once", argument="agent_names"
        )
    return names


def _usage(current_usage: object, names: list[str]) -> list[Fraction]:
    if not isinstance(current_usage, Mapping):
        raise InvalidArgumentType(
            f"current_usage must be a mapping of str to USD, got {type(current_usage).__name__}",
            argument="current_usage",
        )
    return [Fraction(finite_non_negative(current_usage.get(n, 0.0), f"current_usage[{n!r}]")) for n in names]


def _apportion(total: float, floor_units: int, weights: list[Fraction]) -> list[float]:
    """``total`` split into whole units of ``ulp(total)``: each share gets ``floor_units``, the rest goes
    in proportion to ``weights`` (sum > 0) by largest remainder, ties to the earlier name."""
    if total == 0.0:
        return [0.0] * len(weights)
    unit = math.ulp(total)
    units = int(Fraction(total) / Fraction(unit))  # exact: total is a whole number of its last digit
    rest = units - floor_units * len(weights)
    weight_sum = sum(weights)
    ideal = [rest * w / weight_sum for w in weights]
    counts = [math.floor(x) for x in ideal]
    left = rest - sum(counts)
    by_remainder = sorted(range(len(weights)), key=lambda i: (-(ideal[i] - counts[i]), i))
    for i in by_remainder[:left]:
        counts[i] += 1
    return [(floor_units + c) * unit for c in counts]


class _ExactAllocator:
    """What every allocator here does: check the arguments, share nothing when there is nothing to share,
    else apportion exactly the shares ``_shares`` gives (the one method each allocator overrides)."""

    def allocate(
        self, total_budget: float, agent_names: list[str], current_usage: dict[str, float]
    ) -> AllocationResult:
        total = finite_non_negative(total_budget, "total_budget")
        names = _names(agent_names)
        usage = _usage(current_usage, names)
        if not names or total == 0.0:
            return AllocationResult(dict.fromkeys(names, 0.0), 0.0, total)
        shares = self._shares(total, names, usage)
        allocated = sum(shares)  # exact: every partial sum is a whole number of units not above the total
        return AllocationResult(dict(zip(names, shares, strict=True)), allocated, total - allocated)

    def _shares(self, total: float, names: list[str], usage: list[Fraction]) -> list[float]:
        raise NotImplementedError


def _equal(count: int) -> list[Fraction]:
    return [Fraction(1)] * count


class FairShareAllocator(_ExactAllocator):
    """Equal shares of the whole budget, whatever each agent spent."""

    def _shares(self, total: float, names: list[str], usage: list[Fraction]) -> list[float]:
        return _apportion(total, 0, _equal(len(names)))


class WeightedAllocator(_ExactAllocator):
    """Shares in proportion to fixed weights (``weights``: name -> finite number >= 0). An agent without a
    weight gets 0; when every named agent's weight is 0 the budget is split equally."""

    def __init__(self, weights: dict[str, float]) -> None:
        if not isinstance(weights, Mapping):
            raise InvalidArgumentType(
                f"weights must be a mapping of str to a weight, got {type(weights).__name__}",
                argument="weights",
            )
        checked: dict[str, float] = {}
        for name, weight in weights.items():
            if not isinstance(name, str):
                raise InvalidArgumentType(
                    f"weights keys must be str, got {type(name).__name__}", argument="weights"
                )
            try:
                checked[name] = finite_non_negative(weight, f"weights[{name!r}]")
            except ValueError as err:
                raise InvalidArgument(
                    f"weights must be non-negative finite numbers: {err}", argument="weights"
                ) from None
        self._weights = checked

    def _shares(self, total: float, names: list[str], usage: list[Fraction]) -> list[float]:
        weights = [Fraction(self._weights.get(n, 0.0)) for n in names]
        return _apportion(total, 0, weights if any(weights) else _equal(len(names)))


class DynamicAllocator(_ExactAllocator):
    """Shares in proportion to what each agent spent, above a floor: every agent first gets
    ``min_share`` of the budget (in [0, 1); lowered to an equal split when the floors would not fit),
    the rest goes by usage. Without usage (all below 1e-12 USD) the rest is split equally."""

    def __init__(self, min_share: float = 0.05) -> None:
        share = finite_non_negative(min_share, "min_share")
        if share >= 1.0:
            raise InvalidArgument(f"min_share must be in [0.0, 1.0), got {min_share!r}", argument="min_share")
        self._min_share = share

    def _shares(self, total: float, names: list[str], usage: list[Fraction]) -> list[float]:
        units = int(Fraction(total) / Fraction(math.ulp(total)))
        floor_units = math.ceil(Fraction(self._min_share) * units)  # a guarantee: rounded up
        if floor_units * len(names) > units:
            floor_units = units // len(names)
        weights = usage if sum(usage) >= _NO_USAGE else _equal(len(names))
        return _apportion(total, floor_units, weights)
