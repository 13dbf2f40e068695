"""`StoredGraph`: a `Graph` bound to a store, whose every change is committed when the call returns.

Each change: lock the graph's row, catch up with what other processes committed since `version`, let the
engine validate and apply it — leases timed by the database's clock, read under the lock — then write the
engine's delta of that change, `version + 1`, the change's id and the graph's work summary in the same
transaction (docs/dag.md "Stores and workers", docs/design.md §33). A change the database did not take is
dropped from memory too: the graph reloads its committed state on the next call. A change that did not land
because the connection was lost is done again, once, within the store's retry budget (a `mutate()` block only
when its body had not run yet).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from chainwarden._core import (
    DagEngine,
    DagError,
    DagMark,
    Mutation,
    dag_apply_records,
    dag_change_mark,
    dag_delta,
    dag_from_records,
    dag_work,
)
from chainwarden.dag.graph import Graph
from chainwarden.dag.store.backend import Backend, Loaded, Retry, Rows, Tx
from chainwarden.dag.store.errors import StoreCommitUnknownError, StoreConnectionError

if TYPE_CHECKING:
    from chainwarden.dag.store.store import Store

T = TypeVar("T")

#: The version of a graph object that must reload everything (a change the database did not commit).
STALE = -1


class StoredGraph(Graph):
    """A `Graph` whose state lives in a `Store`; same API, plus `version`, `refresh()` and `store`."""

    __slots__ = ("_backend", "_db_now", "_store", "_version")

    _backend: Backend
    _store: Store
    _version: int
    _db_now: float | None

    @classmethod
    def _bind(cls, store: Store, backend: Backend, graph_id: str, loaded: Loaded) -> StoredGraph:
        graph = cls._adopt(DagEngine(graph_id))
        assert isinstance(graph, StoredGraph)
        graph._store, graph._backend = store, backend
        graph._db_now = None
        graph._rebuild(loaded.version, loaded.rows, leaf_repair=loaded.leaf_repair)
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
        """Catches up with changes committed elsewhere, read from one snapshot; returns the version now
        seen."""
        with self._lock:
            backend = self._backend
            if self._version == STALE:
                loaded = backend.reading(lambda: backend.load(self.graph_id))
                self._rebuild(loaded.version, loaded.rows, leaf_repair=loaded.leaf_repair)
            else:
                version, rows = backend.reading(lambda: backend.read_since(self.graph_id, self._version))
                if version != self._version:
                    self._apply_rows(
                        version, rows, lambda: backend.reading(lambda: backend.load(self.graph_id))
                    )
            return self._version

    def _max_attempts(self) -> int:
        return self._store.max_attempts

    def _now(self) -> float:
        # Inside a change: the database's clock, read once the graph's row was locked (docs/design.md §33).
        return time.time() if self._db_now is None else self._db_now

    # ---- catch-up and commit ---------------------------------------------------------------------------

    def _rebuild(self, version: int, rows: Rows, *, leaf_repair: bool) -> None:
        self._engine = dag_from_records(self.graph_id, *rows, leaf_repair=leaf_repair)
        self._version = version

    def _apply_rows(self, version: int, rows: Rows, reload: Callable[[], Loaded]) -> None:
        """Applies rows committed elsewhere in place (O(rows)) when this object is current up to them, else
        rebuilds from every row (`reload`, read from the database: the object keeps no copy of the rows,
        which would double its memory)."""
        try:
            dag_apply_records(self._engine, *rows)
            self._version = version
        except DagError:  # rows this engine cannot take in place: rebuild from every row
            loaded = reload()
            self._rebuild(loaded.version, loaded.rows, leaf_repair=loaded.leaf_repair)

    def _catch_up(self, tx: Tx) -> None:
        if self._version == STALE:
            # A stale object asked for every row (its version is below every row's).
            self._rebuild(tx.version, tx.caught_up, leaf_repair=tx.leaf_repair)
        elif tx.version != self._version:
            self._apply_rows(
                tx.version, tx.caught_up, lambda: Loaded(tx.version, tx.leaf_repair, tx.every_row())
            )

    def _record(self, tx: Tx, mark: DagMark, extra: list[str]) -> None:
        """Hands the transaction what this change wrote: its delta (none: only a corrected work summary, or
        nothing at all) and the graph's work summary, notifying workers when it made more work claimable."""
        written = dag_delta(self._engine, mark, extra)
        work = dag_work(self._engine)
        delta = written if written else None
        if delta is None and work == tx.work:
            return
        tx.write(delta, work, notify=work.claimable > tx.work.claimable)

    def _committed(self, tx: Tx) -> None:
        self._version = tx.version + (1 if tx.delta is not None else 0)

    def _stale(self) -> None:
        # The engine holds a change the database did not commit: forget it (reload on the next call).
        self._version = STALE

    @contextmanager
    def _attempt(self, named: list[str]) -> Iterator[None]:
        """One try at a change: the body applies it to the engine (caught up, clocked by the database, the
        graph's row locked); then its delta is written and committed (`named`: ids the delta must include,
        filled by the body). A change that was applied but did not commit leaves the object stale."""
        applied = False
        try:
            with self._backend.change(self.graph_id, self._version) as tx:
                self._catch_up(tx)
                mark = dag_change_mark(self._engine)
                self._db_now = tx.now
                try:
                    yield  # an engine operation changes nothing when it raises
                finally:
                    self._db_now = None
                applied = True
                self._record(tx, mark, named)
        except BaseException:
            if applied:
                self._stale()
            raise
        self._committed(tx)

    def _apply(self, op: Callable[[], T], *, named: Callable[[T], list[str]] | None = None) -> T:
        """Runs the change `op` in a transaction on the graph's row and commits it with its delta (the module
        docstring); inside this graph's `mutate()` block, that block commits."""
        with self._lock:
            if self._engine.txn_depth:
                return op()
            retry = Retry(self._backend.retry_timeout_s)
            while True:
                ids: list[str] = []
                try:
                    with self._attempt(ids):
                        result = op()
                        ids += named(result) if named else []
                except StoreCommitUnknownError:
                    self._stale()
                    raise
                except StoreConnectionError:
                    # It did not land: the object forgot it, and `op` runs again on the committed state.
                    retry.wait_or_raise()
                    continue
                return result

    @contextmanager
    def mutate(self) -> Iterator[Mutation]:
        with self._lock:
            if self._engine.txn_depth:
                with super().mutate() as handle:
                    yield handle
                return
            retry = Retry(self._backend.retry_timeout_s)
            entered = False
            while True:
                try:
                    with self._attempt([]):
                        entered = True
                        with super().mutate() as handle:
                            yield handle
                except StoreConnectionError:
                    if entered:
                        # The block's body ran and cannot run again: the caller hears that nothing landed.
                        raise
                    retry.wait_or_raise()
                    continue
                return
