"""`StoredGraph`: a `Graph` bound to a store, whose every change is committed when the call returns.

Each change: lock the graph's row, catch up with what other processes committed since `version`, let the
engine validate and apply, then write the engine's delta of that change and `version + 1` in the same
transaction (docs/dag.md "Stores and workers"). A change the database did not take is dropped from memory too:
the graph reloads its committed state on the next call.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from chainwarden._core import (
    DagEngine,
    DagError,
    Mutation,
    dag_apply_records,
    dag_change_mark,
    dag_delta,
    dag_from_records,
)
from chainwarden.dag.graph import Graph, JSONDict
from chainwarden.dag.store.backend import Backend, Delta, Rows, Tx

if TYPE_CHECKING:
    from chainwarden.dag.store.store import Store

T = TypeVar("T")

#: The version of a graph object that must reload everything (a change the database did not commit).
STALE = -1


class StoredGraph(Graph):
    """A `Graph` whose state lives in a `Store`; same API, plus `version`, `refresh()` and `store`."""

    __slots__ = ("_backend", "_store", "_version")

    _backend: Backend
    _store: Store
    _version: int

    @classmethod
    def _bind(cls, store: Store, backend: Backend, graph_id: str, version: int, rows: Rows) -> StoredGraph:
        graph = cls._adopt(DagEngine(graph_id))
        assert isinstance(graph, StoredGraph)
        graph._store, graph._backend = store, backend
        graph._version = STALE
        graph._apply_rows(version, rows, lambda: rows)
        return graph

    @classmethod
    def from_json(cls, data: bytes | str) -> Graph:
        """An in-memory `Graph` (to store a copy, create a graph in a store and build it there)."""
        return Graph.from_json(data)

    @property
    def store(self) -> Store:
        return self._store

    @property
    def version(self) -> int:
        """The committed version this object has seen (0 for a new graph; +1 per committed change)."""
        with self._lock:
            return self._version

    def refresh(self) -> int:
        """Catches up with changes committed elsewhere; returns the version now seen."""
        with self._lock, self._backend.change(self.graph_id, self._version) as tx:
            self._catch_up(tx)
            return self._version

    # ---- catch-up and commit ---------------------------------------------------------------------------

    def _apply_rows(self, version: int, rows: Rows, every_row: Callable[[], Rows]) -> None:
        """Applies rows committed elsewhere: in place when this object is current up to them (O(rows)),
        else by a bulk load of every row (`every_row`, read from the database: the object keeps no copy of
        the rows, which would double its memory)."""
        if self._version != STALE:
            try:
                dag_apply_records(self._engine, *rows)
                self._version = version
                return
            except DagError:  # rows this engine cannot take in place: rebuild from every row
                rows = every_row()
        self._engine = dag_from_records(self.graph_id, *rows)
        self._version = version

    def _catch_up(self, tx: Tx) -> None:
        if tx.version != self._version:
            self._apply_rows(tx.version, tx.rows_since(self._version), tx.every_row)

    def _record(self, tx: Tx, mark: tuple[int, int, int], extra: list[str]) -> Delta | None:
        delta = dag_delta(self._engine, mark, extra)
        if not (delta[0] or delta[1] or delta[2]):
            return None
        tx.write(delta, self._version + 1)
        return delta

    def _committed(self, delta: Delta | None) -> None:
        if delta is None:
            return
        self._version += 1

    def _stale(self) -> None:
        # The engine holds a change the database did not commit: forget it (reload on the next call).
        self._version = STALE

    def _change(self, op: Callable[[], T], extra: Callable[[T], list[str]] | None = None) -> T:
        with self._lock:
            if self._engine.txn_depth:
                return op()  # inside this graph's mutate() block: that block commits
            applied = False
            try:
                with self._backend.change(self.graph_id, self._version) as tx:
                    self._catch_up(tx)
                    mark = dag_change_mark(self._engine)
                    result = op()
                    applied = True
                    delta = self._record(tx, mark, extra(result) if extra else [])
            except BaseException:
                if applied:
                    self._stale()
                raise
            self._committed(delta)
            return result

    @contextmanager
    def mutate(self) -> Iterator[Mutation]:
        with self._lock:
            if self._engine.txn_depth:
                with super().mutate() as handle:
                    yield handle
                return
            applied = False
            try:
                with self._backend.change(self.graph_id, self._version) as tx:
                    self._catch_up(tx)
                    mark = dag_change_mark(self._engine)
                    with super().mutate() as handle:
                        yield handle
                    applied = True
                    delta = self._record(tx, mark, [])
            except BaseException:
                if applied:
                    self._stale()
                raise
            self._committed(delta)

    # ---- every state change goes through `_change` -----------------------------------------------------

    def compress(
        self,
        node_ids: Iterable[str],
        summary_content: str,
        *,
        metadata: JSONDict | None = None,
        node_id: str | None = None,
    ) -> str:
        ids = list(node_ids) if not isinstance(node_ids, (str, bytes)) else node_ids
        return self._change(
            lambda: super(StoredGraph, self).compress(
                ids, summary_content, metadata=metadata, node_id=node_id
            )
        )

    def mark_running(self, node_id: str) -> bool:
        return self._change(lambda: super(StoredGraph, self).mark_running(node_id))

    def mark_finished(
        self,
        node_id: str,
        *,
        content: Any = None,
        output: JSONDict | None = None,
        metadata: JSONDict | None = None,
    ) -> bool:
        return self._change(
            lambda: super(StoredGraph, self).mark_finished(
                node_id, content=content, output=output, metadata=metadata
            )
        )

    def mark_errored(self, node_id: str, error: object) -> bool:
        return self._change(lambda: super(StoredGraph, self).mark_errored(node_id, error))

    def mark_rejected(self, node_id: str, reason: object) -> bool:
        return self._change(lambda: super(StoredGraph, self).mark_rejected(node_id, reason))

    def mark_cancelled(self, node_id: str, reason: object) -> bool:
        return self._change(lambda: super(StoredGraph, self).mark_cancelled(node_id, reason))

    def mark_skipped(self, node_id: str, reason: object) -> bool:
        return self._change(lambda: super(StoredGraph, self).mark_skipped(node_id, reason))

    def claim(
        self, limit: int = 10, *, worker_id: str | None = None, lease_s: float | None = None
    ) -> list[str]:
        return self._change(
            lambda: super(StoredGraph, self).claim(limit, worker_id=worker_id, lease_s=lease_s)
        )

    def heartbeat(self, node_ids: Iterable[str], *, worker_id: str, lease_s: float) -> list[str]:
        ids = list(node_ids) if not isinstance(node_ids, (str, bytes)) else node_ids
        # A renewed lease records no event, so the renewed nodes are named to the delta.
        return self._change(
            lambda: super(StoredGraph, self).heartbeat(ids, worker_id=worker_id, lease_s=lease_s),
            extra=lambda held: held,
        )

    def reclaim_expired(self, *, now: float | None = None, max_attempts: int | None = None) -> list[str]:
        attempts = self._store.max_attempts if max_attempts is None else max_attempts
        return self._change(lambda: super(StoredGraph, self).reclaim_expired(now=now, max_attempts=attempts))

    def propagate_failures(self) -> list[str]:
        return self._change(lambda: super(StoredGraph, self).propagate_failures())

    def repair_leaves(self) -> list[str]:
        return self._change(lambda: super(StoredGraph, self).repair_leaves())

    def apply_result(
        self,
        node_id: str,
        outcome: str,
        *,
        message: object = None,
        content: Any = None,
        output: JSONDict | None = None,
        metadata: JSONDict | None = None,
        worker_id: str | None = None,
    ) -> tuple[bool, list[str], list[str]]:
        return self._change(
            lambda: super(StoredGraph, self).apply_result(
                node_id,
                outcome,
                message=message,
                content=content,
                output=output,
                metadata=metadata,
                worker_id=worker_id,
            )
        )
