"""What both stores do, and the shapes they exchange with `StoredGraph`: a change is one transaction that
locks the graph's row, reads what is newer than the caller's version and the database's clock, and writes the
delta rows, the new version, the change's id and the graph's work summary (docs/dag.md "Stores and workers").
"""

from __future__ import annotations

import json
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from chainwarden._core import DagDelta, DagWork
from chainwarden.dag.store.errors import StoreConnectionError

Row = tuple[int, str, str]
EventRow = tuple[int, str]
#: (seq, record) rows of nodes, edges and events.
Rows = tuple[list[tuple[int, str]], list[tuple[int, str]], list[tuple[int, str]]]
NO_ROWS: Rows = ([], [], [])
T = TypeVar("T")
_FIRST_BACKOFF_S = 0.05
_MAX_BACKOFF_S = 1.0


# A graph's work at a glance, kept on its row: claimable nodes, running nodes, earliest lease end. The
# engine's own summary (`dag_work`), so a store compares what it read with what the engine holds.
Work = DagWork


@dataclass(frozen=True, slots=True)
class GraphWork:
    """One graph of the work index: how many nodes are claimable, and whether a lease has run out."""

    graph_id: str
    claimable: int
    expired: bool


@dataclass(frozen=True, slots=True)
class WorkIndex:
    """What the work index shows at the database's time `now`: graphs with claimable nodes or run-out leases
    (a sample, at most the limit asked), and whether any served graph has a node running under a lease."""

    now: float
    graphs: list[GraphWork]
    leased: bool


@dataclass(frozen=True, slots=True)
class Loaded:
    version: int
    leaf_repair: bool
    rows: Rows


def change_id() -> str:
    """128 random bits: the id a change is committed under, by which a lost commit is resolved."""
    return os.urandom(16).hex()


@dataclass(slots=True)
class Tx:
    """One open change on one graph, its row locked: `version` is the committed version at lock time, `now`
    the database's clock (epoch seconds) read once the lock was held, `work` the summary stored on the row."""

    graph_id: str
    version: int
    now: float
    leaf_repair: bool
    work: Work
    #: Rows newer than the caller's version, read together with the lock.
    caught_up: Rows = NO_ROWS
    #: What to commit: (delta, new version, work, notify), or only a corrected work summary.
    delta: DagDelta | None = None
    new_work: Work | None = None
    notify: bool = False
    change_id: str = field(default_factory=change_id)
    _every_row: Any = None

    def every_row(self) -> Rows:
        """Every row of the graph, read in the change's transaction (to rebuild an object from scratch)."""
        rows: Rows = self._every_row()
        return rows

    def write(self, delta: DagDelta | None, work: Work, *, notify: bool) -> None:
        """Commits `delta` as version `version + 1` with the graph's new work summary (`delta` None: only the
        summary changed, the version stays). `notify`: tell waiting workers that new work is claimable."""
        self.delta = delta
        self.new_work = work
        self.notify = notify


class Retry:
    """Backoff between attempts that did not land (a change) or did not answer (a read), within one budget
    per call."""

    __slots__ = ("_backoff", "_deadline")

    def __init__(self, budget_s: float) -> None:
        self._deadline = time.monotonic() + budget_s
        self._backoff = _FIRST_BACKOFF_S

    def wait_or_raise(self) -> None:
        """Sleeps before the next attempt; re-raises the current exception when the budget is spent."""
        if time.monotonic() + self._backoff >= self._deadline:
            raise  # noqa: PLE0704 - called from an except block: the error that ends the retries
        time.sleep(self._backoff)
        self._backoff = min(self._backoff * 2, _MAX_BACKOFF_S)


class Backend(ABC):
    """A store's database: a change is a transaction on one graph's row; reads see one committed version."""

    def __init__(self, target: str, *, retry_timeout_s: float, pool_size: int) -> None:
        self._target = target
        self.retry_timeout_s = retry_timeout_s
        self._pool_size = pool_size

    def reading(self, read: Callable[[], T]) -> T:
        """`read()`, run again on a fresh connection while its connection is lost (a pooled connection the
        server dropped, a restart), within `retry_timeout_s`: a read changes nothing, so running it again
        is always safe (docs/dag.md "Stores and workers")."""
        retry = Retry(self.retry_timeout_s)
        while True:
            try:
                return read()
            except StoreConnectionError:
                retry.wait_or_raise()

    @abstractmethod
    def close(self) -> None: ...

    @abstractmethod
    def create_graph(self, graph_id: str, at: float, *, leaf_repair: bool) -> None: ...

    @abstractmethod
    def graph_ids(self) -> list[str]: ...

    @abstractmethod
    def load(self, graph_id: str) -> Loaded:
        """Every row of the graph at its latest committed version, from one snapshot."""

    @abstractmethod
    def read_since(self, graph_id: str, version: int) -> tuple[int, Rows]:
        """The committed version and the rows newer than `version`, from one snapshot."""

    @abstractmethod
    @contextmanager
    def change(self, graph_id: str, seen: int) -> Iterator[Tx]:
        """The graph's row locked for one change (the caller has seen version `seen`). On normal exit, what
        the block passed to `Tx.write` is committed (a commit whose outcome is lost is resolved by its change
        id); otherwise, or if nothing was written, the transaction is rolled back. `StoreConnectionError`
        means the change did not land; `StoreCommitUnknownError` that it could not be found out."""

    @abstractmethod
    def work(self, graph_ids: Sequence[str] | None, limit: int) -> WorkIndex:
        """The work index (see `WorkIndex`), over every graph or the ids given."""

    def listen(self) -> Any:
        """A `Listener` woken when another process commits claimable work, or None (SQLite: poll)."""
        return None


def rows_to_json(rows: Sequence[Row]) -> bytes:
    """Delta rows as one JSON array `[[seq, "id", record], ...]` (records are JSON already), the form the
    PostgreSQL statements unpack."""
    return ("[" + ",".join(f"[{s},{json.dumps(k)},{r}]" for s, k, r in rows) + "]").encode()


def events_to_json(rows: Sequence[EventRow]) -> bytes:
    return ("[" + ",".join(f"[{s},{r}]" for s, r in rows) + "]").encode()
