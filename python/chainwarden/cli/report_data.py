"""The calls of a run as the HTML report's script reads them: compact columns, compressed (docs/ui.md).

One JSON document of parallel arrays (one entry per call) plus a table of the distinct strings they use, so a
100,000-call run costs a few bytes per call: texts that repeat (kinds, statuses, names, models, reasons) are
written once, numbers are small integers (times in milliseconds from the run's first start). The document is
deflated (zlib) and written as base64 into the page; the browser inflates it with its own
``DecompressionStream``, so the page needs no library and no network.

Columns (``-1`` is "none" for every integer column):

- ``id`` (str), ``parent`` (index of the call's first parent), ``kind``, ``name``, ``status``, ``model``,
  ``reason`` (indices into ``strings``), ``start`` / ``dur`` (milliseconds, 0.1 ms resolution, as numbers),
  ``cost`` (USD), ``tin`` / ``tout`` (tokens), ``retries``;
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


class _Strings:
    """The table of distinct strings, in order of first use."""

    __slots__ = ("index", "items")

    def __init__(self) -> None:
        self.items: list[str] = []
        self.index: dict[str, int] = {}

    def ref(self, text: str | None) -> int:
        if text is None:
            return -1
        found = self.index.get(text)
        if found is None:
            found = self.index[text] = len(self.items)
            self.items.append(text)
        return found


def _ms(value: float) -> float | int:
    """Milliseconds at 0.1 ms, written as an int when whole (most engine times are)."""
    tenth = round(value * 10.0)
    return tenth // 10 if tenth % 10 == 0 else tenth / 10.0


def _cost(value: float) -> float | int:
    return 0 if value == 0.0 else value


def encode_calls(run: Run) -> dict[str, Any]:
    """The columnar document of ``run``'s calls (plain JSON values)."""
    calls = run.calls
    strings = _Strings()
    ref = strings.ref
    position = {call.id: i for i, call in enumerate(calls)}
    starts = [c.start_ms for c in calls if c.start_ms is not None]
    t0 = min(starts) if starts else 0.0
    ids: list[str] = []
    parent: list[int] = []
    kind: list[int] = []
    name: list[int] = []
    status: list[int] = []
    model: list[int] = []
    reason: list[int] = []
    start: list[float | int] = []
    dur: list[float | int] = []
    cost: list[float | int] = []
    tin: list[int] = []
    tout: list[int] = []
    retries: list[int] = []
    more_parents: dict[str, list[int]] = {}
    detail: dict[str, Any] = {}
    for i, call in enumerate(calls):
        ids.append(call.id)
        known = [position[p] for p in call.parents if p in position]
        parent.append(known[0] if known else -1)
        if len(known) > 1:
            more_parents[str(i)] = known[1:]
        kind.append(ref(call.kind))
        name.append(ref(call.name))
        status.append(ref(call.status))
        model.append(ref(call.model))
        reason.append(ref(call.reason))
        begun = call.start_ms
        start.append(-1 if begun is None else _ms(begun - t0))
        length = call.duration_ms
        dur.append(-1 if length is None else _ms(length))
        cost.append(_cost(call.cost_usd) if math.isfinite(call.cost_usd) else 0)
        tin.append(-1 if call.tokens_in is None else call.tokens_in)
        tout.append(-1 if call.tokens_out is None else call.tokens_out)
        retries.append(call.retries)
        if call.detail:
            detail[str(i)] = call.detail
    return {
        "format": _FORMAT,
        "t0": t0,
        "strings": strings.items,
        "id": ids,
        "parent": parent,
        "kind": kind,
        "name": name,
        "status": status,
        "model": model,
        "reason": reason,
        "start": start,
        "dur": dur,
        "cost": cost,
        "tin": tin,
        "tout": tout,
        "retries": retries,
        "more_parents": more_parents,
        "detail": detail,
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
