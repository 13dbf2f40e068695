"""A read-only, lazily materialised view of the native node records.

A snapshot of a 10,000-call chain must not build 10,000 Python objects up front: the view fixes
the record count at snapshot time (records are append-only and never change once written) and
builds each NodeRecord only when it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, overload

from chainwarden._core import CallRecord, ChainCore
from chainwarden.containment._partials import PartialBuffers
from chainwarden.containment.types import NodeRecord
from chainwarden.errors import InvalidArgumentType

__all__ = ["NodeRecordView"]

_CHUNK = 1024


def _build_all(rows: list[CallRecord], partials: PartialBuffers) -> list[NodeRecord]:
    # Timestamps have millisecond resolution, so neighbouring records mostly share them.
    stamps: dict[float, datetime] = {}

    def stamp(seconds: float) -> datetime:
        found = stamps.get(seconds)
        if found is None:
            found = stamps[seconds] = datetime.fromtimestamp(seconds, UTC)
        return found

    kept = partials.get if partials else None  # one check per batch: most chains keep no buffer
    return [
        NodeRecord(
            r.node_id,
            r.parent_id,
            r.kind,  # type: ignore[arg-type]  # the core only emits NodeKind values
            r.operation_name,
            stamp(r.start_s),
            None if r.end_s is None else stamp(r.end_s),
            r.status,  # type: ignore[arg-type]  # the core only emits NodeStatus values
            r.cost_usd,
            r.retries_used,
            None if kept is None else kept(r.node_id),
            r.error_message,
            r.tokens_in,
            r.tokens_out,
            r.model,
            r.error_class,
            r.stop_reason,
        )
        for r in rows
    ]


class NodeRecordView(Sequence[NodeRecord]):
    __slots__ = ("_core", "_len", "_partials")

    def __init__(self, core: ChainCore, length: int, partials: PartialBuffers) -> None:
        self._core = core
        self._len = length
        self._partials = partials

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> NodeRecord: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[NodeRecord, ...]: ...
    def __getitem__(self, index: int | slice) -> NodeRecord | tuple[NodeRecord, ...]:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._len)
            if step == 1:
                return tuple(_build_all(self._core.records(start, max(start, stop)), self._partials))
            return tuple(self[i] for i in range(start, stop, step))
        if isinstance(index, bool) or not isinstance(index, int):
            raise InvalidArgumentType(
                f"indices must be integers or slices, not {type(index).__name__}", argument="index"
            )
        position = index + self._len if index < 0 else index
        if not 0 <= position < self._len:
            raise IndexError("node record index out of range")
        return _build_all(self._core.records(position, position + 1), self._partials)[0]

    def __iter__(self) -> Iterator[NodeRecord]:
        for start in range(0, self._len, _CHUNK):
            yield from _build_all(self._core.records(start, min(start + _CHUNK, self._len)), self._partials)

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # equality is by content, like a list

    def __repr__(self) -> str:
        return f"NodeRecordView({self._len} records)"
