"""Argument checks shared by shield and containment: typed errors, nothing mutated on failure."""

from __future__ import annotations

import math

__all__ = ["finite_non_negative", "strict_int"]


def strict_int(value: object, name: str, *, minimum: int = 0) -> int:
    # bool is an int subclass; True as a step limit is a bug, not a 1.
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value!r}")
    return value


def finite_non_negative(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"{name} must be finite, got {value!r}")
    if result < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return result
