"""Argument checks shared by every package (shield, containment, integrations): typed errors naming the
argument, nothing mutated on failure."""

from __future__ import annotations

import math
from typing import Final

from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = ["MAX_INT64", "finite_non_negative", "strict_int"]

# Counters and limits are 64-bit signed in the core and in every store (docs/design.md §23).
MAX_INT64: Final = 2**63 - 1


def strict_int(value: object, name: str, *, minimum: int = 0, maximum: int = MAX_INT64) -> int:
    # bool is an int subclass; True as a step limit is a bug, not a 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentType(f"{name} must be an int, got {type(value).__name__}", argument=name)
    if value < minimum:
        raise InvalidArgument(f"{name} must be >= {minimum}, got {value!r}", argument=name)
    if value > maximum:
        raise InvalidArgument(f"{name} must be <= {maximum}, got {value!r}", argument=name)
    return value


def finite_non_negative(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentType(f"{name} must be a number, got {type(value).__name__}", argument=name)
    try:
        result = float(value)
    except OverflowError:  # an int beyond the float range
        raise InvalidArgument(
            f"{name} must be finite, got an int beyond the float range", argument=name
        ) from None
    if not math.isfinite(result):
        raise InvalidArgument(f"{name} must be finite, got {value!r}", argument=name)
    if result < 0:
        raise InvalidArgument(
            f"{name} must be non-negative (>= 0), got {value!r}", argument=name
        )  # the reference's wording
    return result
