"""The shared-budget backend protocol (veronica-core's, plus ``settle``) and its argument checks.

See docs/containment.md "Shared budgets" and docs/design.md §20 (reserve then settle)."""

from __future__ import annotations

import math
from typing import Final, Protocol, runtime_checkable

from chainwarden.errors import BudgetBackendUnavailable, InvalidArgument, InvalidArgumentType

__all__ = [
    "DEFAULT_RESERVATION_TTL_S",
    "BudgetBackend",
    "BudgetBackendUnavailable",
    "SettlingBudgetBackend",
    "check_amount",
    "check_backend",
    "check_reservation_id",
    "check_ttl",
    "reserves",
]

# A killed process never settles: its hold is released by the backend after this long.
DEFAULT_RESERVATION_TTL_S: Final = 60.0
# Float totals against a ceiling: 9.999999999999998 must not slip under 10.0, nor an exact sum be refused.
EPSILON: Final = 1e-9
_METHODS: Final = ("add", "get", "reset", "close", "reserve", "commit", "rollback", "get_reserved")
# What a backend must have at least (the reference accepts such backends too), and the reservation methods
# that come together or not at all (without them holds are kept in this process: docs/containment.md,
# "Shared budgets").
_REQUIRED: Final = ("add", "get")
_RESERVATION: Final = ("reserve", "commit", "rollback")


@runtime_checkable
class BudgetBackend(Protocol):
    """veronica-core's reservable budget backend: every backend written for it works here."""

    def add(self, amount: float) -> float: ...
    def get(self) -> float: ...
    def reset(self) -> None: ...
    def close(self) -> None: ...
    def reserve(self, amount: float, ceiling: float) -> str: ...
    def commit(self, reservation_id: str) -> float: ...
    def rollback(self, reservation_id: str) -> None: ...
    def get_reserved(self) -> float: ...


@runtime_checkable
class SettlingBudgetBackend(BudgetBackend, Protocol):
    """Ours add ``settle``: release a hold and charge the actual cost in one atomic step."""

    def settle(self, reservation_id: str, actual_usd: float) -> float: ...


def check_backend(value: object) -> None:
    """``TypeError`` unless ``value`` has a callable ``add`` and ``get``, and either all of ``reserve``,
    ``commit``, ``rollback`` or none of them."""
    name = type(value).__name__
    missing = [m for m in _REQUIRED if not callable(getattr(value, m, None))]
    if missing:
        raise InvalidArgumentType(
            "budget_backend must provide at least add() and get() "
            f"(the full protocol: {', '.join(_METHODS)}); {name} lacks {', '.join(missing)}",
            argument="budget_backend",
        )
    present = [m for m in _RESERVATION if callable(getattr(value, m, None))]
    if present and len(present) != len(_RESERVATION):
        lacking = [m for m in _RESERVATION if m not in present]
        raise InvalidArgumentType(
            f"budget_backend has {', '.join(present)} but lacks {', '.join(lacking)}: reserve, commit and "
            "rollback come together (or none, and holds are kept in this process)",
            argument="budget_backend",
        )


def reserves(value: object) -> bool:
    """Whether a checked backend holds reservations itself."""
    return callable(getattr(value, "reserve", None))


def check_amount(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentType(f"{name} must be a number, got {type(value).__name__}", argument=name)
    try:
        result = float(value)
    except OverflowError:
        raise InvalidArgument(
            f"{name} must be finite, got an int beyond the float range", argument=name
        ) from None
    if not math.isfinite(result) or result < 0:
        raise InvalidArgument(f"{name} must be finite and >= 0, got {value!r}", argument=name)
    return result


def check_ttl(value: object) -> float:
    ttl = check_amount(value, "reservation_ttl_s")
    if ttl <= 0:
        raise InvalidArgument(f"reservation_ttl_s must be > 0, got {value!r}", argument="reservation_ttl_s")
    return ttl


def check_reservation_id(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentType(
            f"reservation_id must be a str, got {type(value).__name__}", argument="reservation_id"
        )
    if not value or len(value) > 128:
        raise InvalidArgument(
            f"reservation_id must be 1 to 128 characters, got {len(value)}", argument="reservation_id"
        )
    return value


def check_name(value: object, name: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgumentType(f"{name} must be a str, got {type(value).__name__}", argument=name)
    if not value or len(value) > 512 or "\x00" in value:
        raise InvalidArgument(f"{name} must be 1 to 512 characters without NUL, got {value!r}", argument=name)
    return value
