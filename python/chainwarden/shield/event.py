"""SafetyEvent: the normalised record of every non-ALLOW decision and chain-level stop."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from chainwarden.shield.types import Decision

__all__ = ["SafetyEvent"]


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class SafetyEvent:
    """One incident: which hook fired, what it decided and why."""

    event_type: str
    decision: Decision
    reason: str
    hook: str
    request_id: str | None = None
    ts: datetime = field(default_factory=_utc_now)
    metadata: dict[str, Any] = field(default_factory=dict)
