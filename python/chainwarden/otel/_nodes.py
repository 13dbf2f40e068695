"""Reading a graph snapshot (``ExecutionGraph.snapshot()`` format) into validated nodes, parents first.

Everything is checked before a single span is emitted, so a malformed snapshot exports nothing.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = ["Node", "Snapshot", "read_snapshot"]

_NS_PER_MS = 1_000_000


@dataclass(frozen=True, slots=True)
class Node:
    node_id: str
    parent_id: str | None
    kind: str
    name: str
    model: str | None
    start_ns: int
    end_ns: int | None
    status: str
    retries: int
    cost_usd: float
    tokens_in: int | None
    tokens_out: int | None
    stop_reason: str | None
    error_class: str | None
    metadata: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Snapshot:
    chain_id: str | None
    root_id: str | None
    nodes: list[Node]  # every node after its parent
    taken_ns: int | None
    events: list[Any]


def read_snapshot(snapshot: object) -> Snapshot:
    """Parses a snapshot dict or its JSON (bytes or str); ``TypeError`` / ``ValueError`` name ``snapshot``."""
    if isinstance(snapshot, bytes | bytearray | memoryview | str):
        try:
            snapshot = json.loads(bytes(snapshot) if not isinstance(snapshot, str) else snapshot)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidArgument(f"snapshot is not valid JSON: {exc}", argument="snapshot") from exc
    if not isinstance(snapshot, Mapping):
        raise InvalidArgumentType(
            "snapshot must be an ExecutionGraph.snapshot() dict or its JSON bytes, "
            f"got {type(snapshot).__name__}",
            argument="snapshot",
        )
    raw_nodes = snapshot.get("nodes")
    if not isinstance(raw_nodes, Mapping):
        raise InvalidArgument("snapshot['nodes'] must be a mapping of node id to node", argument="snapshot")
    nodes = {key: _node(key, value) for key, value in raw_nodes.items()}
    root_id = _opt_str(snapshot.get("root_id"), "snapshot['root_id']")
    chain_id = _opt_str(snapshot.get("chain_id"), "snapshot['chain_id']")
    taken = snapshot.get("snapshot_ts_ms")
    events = snapshot.get("events", [])
    if not isinstance(events, list | tuple):
        raise InvalidArgument("snapshot['events'] must be a list", argument="snapshot")
    return Snapshot(
        chain_id=chain_id,
        root_id=root_id if root_id in nodes else None,
        nodes=_parents_first(nodes),
        taken_ns=None if taken is None else _ms(taken, "snapshot['snapshot_ts_ms']"),
        events=list(events),
    )


def _node(key: object, raw: object) -> Node:
    where = f"snapshot['nodes'][{key!r}]"
    if not isinstance(key, str) or not isinstance(raw, Mapping):
        raise InvalidArgument(f"{where} must be a node dict under its str id", argument=where)
    node_id = raw.get("node_id", key)
    if node_id != key:
        raise InvalidArgument(f"{where}['node_id'] is {node_id!r}, not its key", argument=where)
    end = raw.get("end_ts_ms")
    metadata = raw.get("metadata") or {}
    if not isinstance(metadata, Mapping):
        raise InvalidArgument(f"{where}['metadata'] must be a dict", argument=where)
    return Node(
        node_id=key,
        parent_id=_opt_str(raw.get("parent_id"), f"{where}['parent_id']"),
        kind=_str(raw.get("kind"), f"{where}['kind']"),
        name=_str(raw.get("name"), f"{where}['name']"),
        model=_opt_str(raw.get("model"), f"{where}['model']"),
        start_ns=_ms(raw.get("start_ts_ms"), f"{where}['start_ts_ms']"),
        end_ns=None if end is None else _ms(end, f"{where}['end_ts_ms']"),
        status=_str(raw.get("status"), f"{where}['status']"),
        retries=_opt_int(raw.get("retries_used"), f"{where}['retries_used']") or 0,
        cost_usd=_number(raw.get("cost_usd", 0.0), f"{where}['cost_usd']"),
        tokens_in=_opt_int(raw.get("tokens_in"), f"{where}['tokens_in']"),
        tokens_out=_opt_int(raw.get("tokens_out"), f"{where}['tokens_out']"),
        stop_reason=_opt_str(raw.get("stop_reason"), f"{where}['stop_reason']"),
        error_class=_opt_str(raw.get("error_class"), f"{where}['error_class']"),
        metadata=metadata,
    )


def _parents_first(nodes: dict[str, Node]) -> list[Node]:
    """Orders nodes so each comes after its parent (a parent missing from the snapshot, e.g. pruned, is
    ignored). A cycle can only come from a hand-edited snapshot and is rejected."""
    depth: dict[str, int] = {}
    for node_id in nodes:
        chain: list[str] = []
        current: str | None = node_id
        while current is not None and current in nodes and current not in depth:
            if len(chain) > len(nodes):
                raise InvalidArgument(
                    f"snapshot['nodes'] has a parent cycle through {node_id!r}", argument="snapshot"
                )
            chain.append(current)
            current = nodes[current].parent_id
        base = depth.get(current, -1) if current is not None else -1
        for offset, member in enumerate(reversed(chain), start=1):
            depth[member] = base + offset
    order = {node_id: index for index, node_id in enumerate(nodes)}
    return sorted(nodes.values(), key=lambda n: (depth[n.node_id], order[n.node_id]))


def _str(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise InvalidArgument(f"{where} must be a str, got {type(value).__name__}", argument=where)
    return value


def _opt_str(value: object, where: str) -> str | None:
    return None if value is None else _str(value, where)


def _opt_int(value: object, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgument(f"{where} must be a non-negative int, got {value!r}", argument=where)
    return value


def _number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
        raise InvalidArgument(f"{where} must be a finite non-negative number, got {value!r}", argument=where)
    return float(value)


def _ms(value: object, where: str) -> int:
    ms = _number(value, where)
    # Integer milliseconds (what the recorder writes) convert exactly; floats to the nearest nanosecond.
    return value * _NS_PER_MS if isinstance(value, int) else round(ms * _NS_PER_MS)
