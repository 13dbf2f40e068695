"""What `chainwarden inspect` reports about a run, as one JSON-ready dict (`--json` prints it as is)."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from chainwarden.cli.runfile import Call, Run, finite

__all__ = ["TOP", "summarize"]

TOP = 5  # how many of the slowest / most expensive calls are listed

_AMPLIFICATION = ("llm_calls_per_root", "tool_calls_per_root", "retries_per_root")


def _call(call: Call) -> dict[str, Any]:
    return {
        "id": call.id,
        "name": call.name,
        "kind": call.kind,
        "status": call.status,
        "duration_ms": call.duration_ms,
        "cost_usd": call.cost_usd,
    }


def _amplification(run: Run) -> dict[str, float]:
    """Saved aggregates win (the engine computed them); otherwise per root, counted from the calls."""
    saved = {k: finite(run.aggregates.get(k)) for k in _AMPLIFICATION}
    if all(v is not None for v in saved.values()):
        return {k: v for k, v in saved.items() if v is not None}
    roots = sum(1 for c in run.calls if not c.parents) or 1
    kinds = Counter(c.kind for c in run.calls)
    llm = kinds["llm"] + kinds["agent_message"]
    tools = kinds["tool"] + kinds["task"]
    return {
        "llm_calls_per_root": llm / roots,
        "tool_calls_per_root": tools / roots,
        "retries_per_root": sum(c.retries for c in run.calls) / roots,
    }


def _strict(value: Any) -> Any:
    """Saved event payloads as strict JSON: a non-finite number (``Infinity`` in the file) becomes null."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): _strict(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strict(v) for v in value]
    return value


def _divergence_count(run: Run, saved: list[dict[str, Any]]) -> int:
    count = run.aggregates.get("divergence_emitted_count")
    return count if isinstance(count, int) and not isinstance(count, bool) else len(saved)


def summarize(run: Run) -> dict[str, Any]:
    calls = run.calls
    by_kind_status: dict[str, dict[str, int]] = {}
    for c in calls:
        row = by_kind_status.setdefault(c.kind, {})
        row[c.status] = row.get(c.status, 0) + 1
    timed = [c for c in calls if c.duration_ms is not None]
    slowest = sorted(timed, key=lambda c: (-(c.duration_ms or 0.0), c.id))[:TOP]
    expensive = sorted((c for c in calls if c.cost_usd > 0), key=lambda c: (-c.cost_usd, c.id))[:TOP]
    tokens_in = [c.tokens_in for c in calls if c.tokens_in is not None]
    tokens_out = [c.tokens_out for c in calls if c.tokens_out is not None]
    saved_total = finite(run.aggregates.get("total_cost_usd"))
    total = saved_total if saved_total is not None else finite(sum(c.cost_usd for c in calls))
    divergence: list[dict[str, Any]] = [_strict(e) for e in run.divergence]
    return {
        "source": run.source,
        "id": run.title,
        # The run's context (docs/containment.md "Context that travels"): user, session, tags, attributes.
        "context": run.labels.as_dict(),
        "nodes": len(calls),
        "by_kind": dict(Counter(c.kind for c in calls)),
        "by_status": dict(Counter(c.status for c in calls)),
        "by_kind_status": by_kind_status,
        "cost_usd": total,
        "tokens_in": sum(tokens_in) if tokens_in else None,
        "tokens_out": sum(tokens_out) if tokens_out else None,
        "amplification": _amplification(run),
        "slowest": [_call(c) for c in slowest],
        "most_expensive": [_call(c) for c in expensive],
        "halts": [{**_call(c), "reason": c.reason} for c in calls if c.halted or c.failed],
        "divergence_events": divergence,
        "divergence_count": _divergence_count(run, divergence),
        "safety_events": [
            _strict(
                {"event_type": e.get("event_type"), "decision": e.get("decision"), "reason": e.get("reason")}
            )
            for e in run.events
            if run.source == "containment"
        ],
    }
