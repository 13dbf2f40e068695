"""Reading a saved run: the three JSON files chainwarden writes, turned into one neutral shape.

- an ``ExecutionGraph`` snapshot: ``graph.snapshot_json()`` (or
  ``ExecutionContext.get_graph_snapshot_json()``), optionally with a ``"divergence_events"`` list added from
  ``graph.drain_divergence_events()``;
- a containment snapshot: ``context_snapshot_json(ctx.get_snapshot())`` (chainwarden.cli.export);
- a DAG: ``Graph.to_json()``.

The inspector and the renderers only ever see `Run`; nothing here re-decides what the engine decided:
statuses, costs and aggregates are read as saved."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, cast

from chainwarden._chain_context import RunLabels, read_labels
from chainwarden.errors import ChainwardenError
from chainwarden.vocab import CallStatus, DagState, NodeStatus

__all__ = ["Call", "Run", "RunFileError", "finite", "load_run", "parse_run"]

Source = Literal["execution-graph", "containment", "dag"]

# Statuses that end a call without success, per source; "halts" are the ones a limit or policy decided.
HALT_STATUSES: frozenset[str] = frozenset(
    {
        NodeStatus.HALT,
        CallStatus.HALTED,
        CallStatus.ABORTED,
        CallStatus.TIMEOUT,
        DagState.REJECTED,
        DagState.CANCELLED,
        DagState.SKIPPED,
    }
)
FAIL_STATUSES: frozenset[str] = frozenset({NodeStatus.FAIL, CallStatus.ERROR, DagState.ERRORED})


class RunFileError(ChainwardenError, ValueError):
    """The file is not a run chainwarden can read; the message says what was expected."""


@dataclass(frozen=True, slots=True)
class Call:
    """One recorded call (a graph node, a wrapped call or a DAG node)."""

    id: str
    parents: tuple[str, ...]
    kind: str
    name: str
    status: str
    start_ms: float | None = None
    end_ms: float | None = None
    cost_usd: float = 0.0
    tokens_in: int | None = None
    tokens_out: int | None = None
    model: str | None = None
    reason: str | None = None
    retries: int = 0
    # What the report's detail panel shows besides the columns: the node's metadata (captured content
    # included), a DAG node's input / output / content; None when there is nothing.
    detail: Mapping[str, Any] | None = None

    @property
    def duration_ms(self) -> float | None:
        if self.start_ms is None or self.end_ms is None:
            return None
        return max(0.0, self.end_ms - self.start_ms)

    @property
    def halted(self) -> bool:
        return self.status in HALT_STATUSES

    @property
    def failed(self) -> bool:
        return self.status in FAIL_STATUSES


@dataclass(frozen=True)
class Run:
    """A whole run in the order it was saved. ``edges`` are (from, to, label)."""

    source: Source
    title: str
    calls: list[Call]
    edges: list[tuple[str, str, str]]
    aggregates: dict[str, Any] = field(default_factory=dict)
    divergence: list[dict[str, Any]] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    raw: dict[str, Any] = field(default_factory=dict)
    # The run's context (user, session, tags, attributes; docs/containment.md "Context that travels").
    labels: RunLabels = field(default_factory=RunLabels)


def load_run(path: Path) -> Run:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise RunFileError(f"cannot read {path}: {exc.strerror or exc}") from None
    return parse_run(data, name=str(path))


def parse_run(data: bytes | str, name: str = "<input>") -> Run:
    try:
        doc = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RunFileError(f"{name} is not JSON: {exc}") from None
    except RecursionError:
        raise RunFileError(f"{name} is nested too deeply to be a run") from None
    if not isinstance(doc, dict):
        raise RunFileError(f"{name}: expected a JSON object, got {type(doc).__name__}")
    try:
        if doc.get("format") == "chainwarden.dag":
            return _dag(doc)
        if "step_count" in doc and "nodes" in doc:
            return _containment(doc)
        if "nodes" in doc and ("aggregates" in doc or "root_id" in doc):
            return _execution_graph(doc)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunFileError(f"{name}: malformed run file ({type(exc).__name__}: {exc})") from None
    raise RunFileError(
        f"{name} is not a chainwarden run: expected an ExecutionGraph snapshot, a containment snapshot "
        "or a DAG export (Graph.to_json)"
    )


def _text(value: object) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


def finite(value: object) -> float | None:
    """A finite number as float; None for anything else (bools, strings, NaN, infinities)."""
    kind = type(value)
    if kind is float:  # the common case first: what the engine writes
        return cast(float, value) if _isfinite(cast(float, value)) else None
    if kind is int:
        try:
            return float(cast(int, value))
        except OverflowError:  # an int beyond float range
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if _isfinite(number) else None


_isfinite = math.isfinite


# Milliseconds since the epoch up to the year ~33,000: anything outside is not a timestamp the engine wrote.
_MAX_TS_MS = 1e15


def _ts_ms(value: object, scale: float = 1.0) -> float | None:
    if value is None:
        return None
    number = finite(value)
    if number is None:
        return None
    ms = number * scale
    return ms if 0.0 <= ms < _MAX_TS_MS else None


def _count(value: object) -> int | None:
    """A token or retry count as the engine keeps it (an unsigned 64-bit counter); None otherwise."""
    if type(value) is int and 0 <= value < 2**64:  # not a bool: type() is exact
        return value
    return None


def _ms_field(value: object) -> float | None:
    """A recorder timestamp: an int of milliseconds on the common path, else checked by ``_ts_ms``."""
    if type(value) is int and 0 <= value < _MAX_TS_MS:
        return float(value)
    return _ts_ms(value)


def _graph_call(n: Mapping[str, Any]) -> Call:
    get = n.get
    parent = get("parent_id")
    cost = get("cost_usd")
    return Call(
        id=str(n["node_id"]),
        parents=() if parent is None else (str(parent),),
        kind=str(get("kind", "")),
        name=str(get("name", "")),
        status=str(get("status", "")),
        start_ms=_ms_field(get("start_ts_ms")),
        end_ms=_ms_field(get("end_ts_ms")),
        cost_usd=(cost if type(cost) is float and _isfinite(cost) else finite(cost)) or 0.0,
        tokens_in=_count(get("tokens_in")),
        tokens_out=_count(get("tokens_out")),
        model=_text(get("model")),
        reason=_reason(get("error_class"), get("stop_reason")),
        retries=_count(get("retries_used")) or 0,
        detail=_detail(get("metadata")),
    )


def _execution_graph(doc: Mapping[str, Any]) -> Run:
    nodes = doc["nodes"]
    records = list(nodes.values()) if isinstance(nodes, Mapping) else list(nodes)
    calls = [_graph_call(n) for n in records]
    divergence = doc.get("divergence_events") or []
    root = nodes.get(doc.get("root_id")) if isinstance(nodes, Mapping) else None
    return Run(
        source="execution-graph",
        title=str(doc.get("chain_id", "")),
        calls=calls,
        edges=[(p, c.id, "") for c in calls for p in c.parents],
        aggregates=dict(doc.get("aggregates") or {}),
        divergence=[dict(e) for e in divergence],
        raw=dict(doc),
        labels=read_labels(root.get("metadata") if isinstance(root, Mapping) else None),
    )


def _detail(metadata: object) -> Mapping[str, Any] | None:
    return {"metadata": metadata} if isinstance(metadata, Mapping) and metadata else None


def _record_detail(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """A wrapped call's error message (docs/design.md §22) and, when saved, its node's metadata."""
    detail = {k: record[k] for k in ("error_message", "model", "metadata") if record.get(k) not in (None, {})}
    return detail or None


def _reason(error_class: object, stop_reason: object) -> str | None:
    if error_class is None and stop_reason is None:
        return None
    parts = [p for p in (_text(error_class), _text(stop_reason)) if p]
    return ": ".join(parts) or None


def _iso_ms(value: object) -> float | None:
    if not isinstance(value, str):
        return _ts_ms(value)
    try:
        return _ts_ms(datetime.fromisoformat(value).timestamp() * 1000.0)
    except (ValueError, OverflowError, OSError):
        return None


def _containment(doc: Mapping[str, Any]) -> Run:
    calls = [
        Call(
            id=str(n["node_id"]),
            parents=() if n.get("parent_id") is None else (str(n["parent_id"]),),
            kind=str(n.get("kind", "")),
            name=str(n.get("operation_name", "")),
            status=str(n.get("status", "")),
            start_ms=_iso_ms(n.get("start_ts")),
            end_ms=_iso_ms(n.get("end_ts")),
            cost_usd=finite(n.get("cost_usd")) or 0.0,
            tokens_in=_count(n.get("tokens_in")),
            tokens_out=_count(n.get("tokens_out")),
            model=_text(n.get("model")),
            reason=_record_reason(n),
            retries=_count(n.get("retries_used")) or 0,
            detail=_record_detail(n),
        )
        for n in doc["nodes"]
    ]
    events = [dict(e) for e in doc.get("events") or []]
    # The chain's graph reports its divergence warnings as safety events of the ExecutionGraph hook.
    divergence = [
        dict(e.get("metadata") or {"event_type": e.get("event_type")})
        for e in events
        if e.get("hook") == "ExecutionGraph"
    ]
    summary = dict(doc.get("graph_summary") or {})
    summary.setdefault("total_cost_usd", finite(doc.get("cost_usd_accumulated")) or 0.0)
    return Run(
        source="containment",
        title=str(doc.get("chain_id", "")),
        calls=calls,
        edges=[(p, c.id, "") for c in calls for p in c.parents],
        aggregates=summary,
        divergence=divergence,
        events=events,
        raw=dict(doc),
        labels=read_labels(doc.get("metadata")),
    )


def _record_reason(record: Mapping[str, Any]) -> str | None:
    """Why a call ended as it did, from its own record: the class and message of its exception, else the
    stop reason (never paired with the chain's events by position: a retried failure has no event)."""
    error = _text(record.get("error_class"))
    message = _text(record.get("error_message"))
    if error and message:
        error = f"{error}: {message}"
    parts = [p for p in (_text(record.get("stop_reason")), error or message) if p]
    return ": ".join(parts) or None


def _dag(doc: Mapping[str, Any]) -> Run:
    calls: list[Call] = []
    parents: dict[str, list[str]] = {}
    edges: list[tuple[str, str, str]] = []
    for e in doc.get("edges") or []:
        if e.get("compressed_at") is None:
            edges.append((str(e["from_node_id"]), str(e["to_node_id"]), str(e.get("edge_type", ""))))
            parents.setdefault(str(e["to_node_id"]), []).append(str(e["from_node_id"]))
    for n in doc["nodes"]:
        if n.get("compressed_at") is not None:
            continue  # archived versions: the report shows the active graph, like every DAG read
        node_id = str(n["node_id"])
        meta = n.get("metadata") or {}
        inp = n.get("input") or {}
        started, finished = _ts_ms(n.get("started_at"), 1000.0), _ts_ms(n.get("finished_at"), 1000.0)
        calls.append(
            Call(
                id=node_id,
                parents=tuple(parents.get(node_id, ())),
                kind=str(n.get("node_type", "")),
                name=_dag_name(node_id, inp),
                status=str(n.get("state", "")),
                start_ms=started,
                end_ms=None if started is None else finished,
                cost_usd=finite(meta.get("cost_usd")) or 0.0,
                tokens_in=_count(meta.get("tokens_in")),
                tokens_out=_count(meta.get("tokens_out")),
                model=_text(meta.get("model")),
                reason=_text(meta.get("error") or meta.get("reason")),
                detail={k: n[k] for k in _DAG_DETAIL if n.get(k) not in (None, {}, "")} or None,
            )
        )
    return Run(
        source="dag",
        title=str(doc.get("graph_id", "")),
        calls=calls,
        edges=edges,
        events=[dict(e) for e in doc.get("events") or []],
        raw=dict(doc),
    )


_DAG_DETAIL = ("metadata", "input", "output", "content", "worker_id", "attempt")


def _dag_name(node_id: str, inp: Mapping[str, Any]) -> str:
    """A DAG node is named by its id, plus the tool name of a task."""
    tool = inp.get("name") if isinstance(inp, Mapping) else None
    return f"{node_id} ({tool})" if isinstance(tool, str) and tool else node_id
