"""The calls of a run as the HTML report's script reads them: compact columns, compressed (docs/ui.md).

One JSON document of parallel arrays (one entry per call) plus a table of the distinct strings they use, so a
100,000-call run costs a few bytes per call: texts that repeat (kinds, statuses, names, models, reasons) are
written once, numbers are small integers (times in milliseconds from the run's first start). The document is
deflated (zlib) and written as base64 into the page; the browser inflates it with its own
``DecompressionStream``, so the page needs no library and no network.

Columns (``-1`` is "none" for every integer column):

- ``id`` (str), ``parent`` (index of the call's first parent), ``kind``, ``name``, ``status``, ``model``,
  ``reason`` (indices into ``strings``), ``start`` (since ``t0``, the first start in epoch milliseconds) and
  ``dur``, both in tenths of a millisecond, ``cost`` (USD), ``tin`` / ``tout`` (tokens), ``retries``;
- ``more_parents``: ``{index: [parent indices]}`` for the DAG nodes with several parents;
- ``detail``: ``{index: {...}}``, what the detail panel shows besides the columns (metadata, captured
  content, a DAG node's input and output), only for the calls that have some.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from typing import Any

from chainwarden.cli.runfile import Run

__all__ = ["encode_calls", "report_payload"]

_FORMAT = 1


def _coded(values: list[str | None], index: dict[str, int]) -> list[int]:
    """``values`` as indices into the string table ``index`` (first use first; None is -1)."""
    add = index.setdefault
    return [-1 if v is None else add(v, len(index)) for v in values]


def _tenths(values: list[float | None], origin: float) -> list[int]:
    """Milliseconds since ``origin`` in tenths of a millisecond (-1 for none): small integers."""
    return [-1 if v is None else round((v - origin) * 10.0) for v in values]


def encode_calls(run: Run) -> dict[str, Any]:
    """The columnar document of ``run``'s calls (plain JSON values)."""
    calls = run.calls
    position = {call.id: i for i, call in enumerate(calls)}
    starts = [c.start_ms for c in calls]
    ends = [c.end_ms for c in calls]
    known = [t for t in starts if t is not None]
    t0 = min(known) if known else 0.0
    index: dict[str, int] = {}
    parent: list[int] = []
    more_parents: dict[str, list[int]] = {}
    detail: dict[str, Any] = {}
    for i, call in enumerate(calls):
        parents = call.parents
        if not parents:
            parent.append(-1)
            continue
        first = position.get(parents[0], -1)
        parent.append(first)
        if len(parents) > 1:
            found = [position[p] for p in parents if p in position]
            if len(found) > 1:
                parent[-1] = found[0]
                more_parents[str(i)] = found[1:]
    for i, call in enumerate(calls):
        if call.detail:
            detail[str(i)] = call.detail
    durations = [
        None if s is None or e is None else max(0.0, e - s) for s, e in zip(starts, ends, strict=True)
    ]
    return {
        "format": _FORMAT,
        "t0": t0,
        "id": [c.id for c in calls],
        "parent": parent,
        "kind": _coded([c.kind for c in calls], index),
        "name": _coded([c.name for c in calls], index),
        "status": _coded([c.status for c in calls], index),
        "model": _coded([c.model for c in calls], index),
        "reason": _coded([c.reason for c in calls], index),
        "start": _tenths(starts, t0),
        "dur": _tenths(durations, 0.0),
        "cost": [c.cost_usd if c.cost_usd and math.isfinite(c.cost_usd) else 0 for c in calls],
        "tin": [-1 if c.tokens_in is None else c.tokens_in for c in calls],
        "tout": [-1 if c.tokens_out is None else c.tokens_out for c in calls],
        "retries": [c.retries for c in calls],
        "more_parents": more_parents,
        "detail": detail,
        "strings": list(index),
    }


def _strict(value: Any) -> Any:
    """JSON the browser's strict parser takes: non-finite numbers (a hand-edited file) become null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


def report_payload(doc: dict[str, Any]) -> str:
    """``doc`` as JSON, deflated and base64-encoded: the text the page embeds (ASCII only, no markup)."""
    try:
        text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:  # a NaN somewhere in saved metadata
        text = json.dumps(_strict(doc), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    return base64.b64encode(zlib.compress(text.encode("utf-8", "surrogatepass"), 6)).decode("ascii")
