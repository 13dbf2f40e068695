"""What "state unchanged" means for an `ExecutionGraph`: every node and aggregate as written
by `snapshot_json()` (minus its timestamp), plus the counters outside the snapshot."""

from __future__ import annotations

import json
import re
from typing import Any

from chainwarden import ExecutionGraph

_SNAPSHOT_TS = re.compile(rb', "snapshot_ts_ms": -?\d+}$')


def without_snapshot_ts(raw: bytes) -> bytes:
    stripped, n = _SNAPSHOT_TS.subn(b"}", raw)
    assert n == 1, raw[-80:]
    return stripped


def strict_loads(raw: bytes) -> Any:
    """json.loads that fails on NaN/Infinity, which RFC 8259 does not allow."""

    def reject(token: str) -> Any:
        raise AssertionError(f"non-strict JSON token {token!r}")

    return json.loads(raw, parse_constant=reject)


def frozen(g: ExecutionGraph) -> tuple[bytes, dict[str, Any], int, int]:
    raw = g.snapshot_json()
    strict_loads(raw)
    return without_snapshot_ts(raw), g.aggregates(), len(g), g.pruned_count
