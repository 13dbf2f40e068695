"""Saving a containment snapshot so `chainwarden inspect` / `render` can read it later.

``ExecutionContext.get_snapshot()`` returns Python objects (datetimes, enums, a lazy node view); this writes
them as strict JSON: timestamps in ISO 8601, decisions by value, non-finite numbers as null."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import Any

from chainwarden.containment import ContextSnapshot
from chainwarden.errors import InvalidArgumentType

__all__ = ["context_snapshot_dict", "context_snapshot_json"]


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return _plain(value.value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, str | int | bool):
        return value
    to_dict = getattr(value, "to_dict", None)  # a PartialResultBuffer: its text, chunk count, completeness
    if callable(to_dict):
        return _plain(to_dict())
    return repr(value)


def context_snapshot_dict(snapshot: ContextSnapshot) -> dict[str, Any]:
    """The snapshot as a JSON-ready dict (every node record built)."""
    if not isinstance(snapshot, ContextSnapshot):
        raise InvalidArgumentType(
            f"snapshot must be a ContextSnapshot, got {type(snapshot).__name__}", argument="snapshot"
        )
    doc: dict[str, Any] = _plain(snapshot)
    return doc


def context_snapshot_json(snapshot: ContextSnapshot) -> bytes:
    """``context_snapshot_dict`` encoded as strict JSON bytes (UTF-8)."""
    return json.dumps(context_snapshot_dict(snapshot), ensure_ascii=False, allow_nan=False).encode()
