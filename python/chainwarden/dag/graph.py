"""`Graph`: the thread-safe, transactional face of the native DAG engine.

The engine owns every rule; this layer adds the one thing a single native call cannot: a `mutate()` block that
spans several calls, holds the graph for its whole duration and is undone as a unit if the block raises.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from chainwarden._core import (
    DagEngine,
    Mutation,
    dag_check_lease,
    dag_claim_leased,
    dag_heartbeat,
    dag_reclaim_expired,
    dag_release,
)
from chainwarden.dag.errors import invalid_argument

JSONDict = dict[str, Any]
T = TypeVar("T")


def _worker(worker_id: object, *, required: bool) -> str | None:
    if worker_id is None and not required:
        return None
    if not isinstance(worker_id, str) or not worker_id:
        raise invalid_argument("worker_id must be a non-empty string", argument="worker_id")
    return worker_id


def _lease(lease_s: object) -> float:
    if isinstance(lease_s, bool) or not isinstance(lease_s, (int, float)) or not 0 < lease_s < 1e9:
        raise invalid_argument("lease_s must be a number of seconds > 0", argument="lease_s")
    return float(lease_s)


def _read(node_ids: Iterable[str]) -> Iterable[str]:
    # Read once, so a change that runs again reads the same ids; a non-iterable is left to the engine's check.
    if isinstance(node_ids, (str, bytes)) or not isinstance(node_ids, Iterable):
        return node_ids
    return list(node_ids)


def _ids(node_ids: object) -> list[str]:
    if isinstance(node_ids, str) or not isinstance(node_ids, Iterable):
        raise invalid_argument("node_ids must be an iterable of node id strings", argument="node_ids")
    ids = list(node_ids)
    if not all(isinstance(i, str) for i in ids):
        raise invalid_argument("node_ids must be an iterable of node id strings", argument="node_ids")
    return ids


class Graph:
    """An in-memory conversation / task DAG backed by the Rust core. Safe to share between threads."""

    __slots__ = ("_engine", "_lock")

    def __init__(self, *, graph_id: str | None = None, leaf_repair: bool = True) -> None:
        # leaf_repair=False: a pure task workflow, whose finished tasks stay leaves (docs/dag.md).
        self._engine = DagEngine(graph_id, leaf_repair=leaf_repair)
        # Re-entrant: an executor running inside a thread that holds the graph may still call mutate().
        self._lock = threading.RLock()

    @classmethod
    def _adopt(cls, engine: DagEngine) -> Graph:
        graph = cls.__new__(cls)
        graph._engine = engine
        graph._lock = threading.RLock()
        return graph

    def _now(self) -> float:
        """The clock leases are set and compared with: this process's, for a graph in memory. A stored graph
        uses its database's instead (docs/design.md §33)."""
        return time.time()

    @property
    def graph_id(self) -> str:
        return self._engine.graph_id

    @property
    def leaf_repair(self) -> bool:
        """Whether `mutate()` and applied results repair leaves (docs/dag-rules.md §5.2)."""
        return self._engine.leaf_repair

    def __len__(self) -> int:
        with self._lock:
            return len(self._engine)

    @contextmanager
    def mutate(self) -> Iterator[Mutation]:
        """An atomic block: all of it happens (then leaves are repaired), or none of it does."""
        with self._lock:
            self._engine.begin()
            # The native handle (`rust/py/src/dag/mutation.rs`) calls the engine directly; ended here, so
            # a call after the block raises.
            handle = Mutation(self._engine)
            try:
                yield handle
            except BaseException:
                handle._end()
                self._engine.rollback()
                raise
            handle._end()
            self._engine.commit()

    # ---- every state change runs through `_apply` --------------------------------------------------------
    # Arguments are checked (and iterables read) before the change, so `op` only touches the engine and can
    # run again as it is (a stored graph does, once, when its connection was lost). `op` reads `self._engine`
    # when it runs, never before: a stored graph may rebuild its engine while catching up first.

    def _apply(self, op: Callable[[], T], *, named: Callable[[T], list[str]] | None = None) -> T:
        """The one seam every state-changing operation runs through: `op` applies the change to the engine,
        holding the graph. In memory that is all; a stored graph commits it (`StoredGraph._apply`).
        `named` gives the ids of nodes the change touched without recording an event (a renewed lease), for
        a store's delta."""
        with self._lock:
            return op()

    def _max_attempts(self) -> int:
        """Claims of a node before an expired lease errors it (docs/dag.md "Stores and workers")."""
        return 3

    def compress(
        self,
        node_ids: Iterable[str],
        summary_content: str,
        *,
        metadata: JSONDict | None = None,
        node_id: str | None = None,
    ) -> str:
        ids = _read(node_ids)
        return self._apply(
            lambda: self._engine.compress(ids, summary_content, metadata=metadata, node_id=node_id)
        )

    def mark_running(self, node_id: str) -> bool:
        return self._apply(lambda: self._engine.mark_running(node_id))

    def mark_finished(
        self,
        node_id: str,
        *,
        content: Any = None,
        output: JSONDict | None = None,
        metadata: JSONDict | None = None,
    ) -> bool:
        return self._apply(
            lambda: self._engine.mark_finished(node_id, content=content, output=output, metadata=metadata)
        )

    def mark_errored(self, node_id: str, error: object) -> bool:
        return self._apply(lambda: self._engine.mark_errored(node_id, error))

    def mark_rejected(self, node_id: str, reason: object) -> bool:
        return self._apply(lambda: self._engine.mark_rejected(node_id, reason))

    def mark_cancelled(self, node_id: str, reason: object) -> bool:
        return self._apply(lambda: self._engine.mark_cancelled(node_id, reason))

    def mark_skipped(self, node_id: str, reason: object) -> bool:
        return self._apply(lambda: self._engine.mark_skipped(node_id, reason))

    def claim(
        self, limit: int = 10, *, worker_id: str | None = None, lease_s: float | None = None
    ) -> list[str]:
        """Ready pending executables -> running. With `lease_s` the claim is leased to `worker_id`
        (docs/dag.md "Stores and workers"): `claimed_by` / `lease_expires_at` land in the node's metadata."""
        if worker_id is None and lease_s is None:
            return self._apply(lambda: self._engine.claim(limit))
        worker = _worker(worker_id, required=False)
        lease = None if lease_s is None else _lease(lease_s)
        return self._apply(lambda: self._claim_op(limit, worker, lease))

    def heartbeat(self, node_ids: Iterable[str], *, worker_id: str, lease_s: float) -> list[str]:
        """Extends by `lease_s` the leases `worker_id` still holds among `node_ids`; returns those ids."""
        ids = _ids(node_ids)
        worker, lease = _worker(worker_id, required=True), _lease(lease_s)
        assert worker is not None
        # A renewed lease records no event, so the renewed nodes are named to a store's delta.
        return self._apply(
            lambda: dag_heartbeat(self._engine, ids, worker, self._now() + lease), named=lambda held: held
        )

    def release(self, node_ids: Iterable[str], *, worker_id: str) -> list[str]:
        """Gives back, unfinished, the nodes among `node_ids` that `worker_id` holds: each goes back to
        `pending` with its lease cleared and its attempt not counted (a worker stopping gracefully,
        docs/dag.md "Workers"); returns their ids. Nodes it does not hold are left alone."""
        ids = _ids(node_ids)
        worker = _worker(worker_id, required=True)
        assert worker is not None
        return self._apply(lambda: dag_release(self._engine, ids, worker))

    def reclaim_expired(self, *, now: float | None = None, max_attempts: int | None = None) -> list[str]:
        """Running nodes whose lease ended before `now`: back to pending (attempt + 1) or errored
        `lease_expired` once `max_attempts` is reached (None: 3; a stored graph: its store's)."""
        if now is not None and (isinstance(now, bool) or not isinstance(now, (int, float))):
            raise invalid_argument("now must be a number (epoch seconds) or None", argument="now")
        attempts = self._max_attempts() if max_attempts is None else max_attempts
        return self._apply(
            lambda: dag_reclaim_expired(self._engine, self._now() if now is None else float(now), attempts)
        )

    def _claim_leased(
        self, limit: int, worker_id: str, lease_s: float, max_attempts: int | None = None
    ) -> tuple[list[str], list[str], list[str]]:
        """A worker's claim (docs/dag.md "Workers"): reclaim expired leases, skip what can no longer run,
        then claim up to `limit` with a lease; (reclaimed, skipped, claimed), in one change."""
        worker, lease = _worker(worker_id, required=False), _lease(lease_s)
        attempts = self._max_attempts() if max_attempts is None else max_attempts
        return self._apply(lambda: self._claim_leased_op(limit, worker, lease, attempts))

    def _complete(
        self,
        node_id: str,
        outcome: str,
        payload: JSONDict,
        worker_id: str,
        *,
        refill: int,
        lease_s: float,
        max_attempts: int | None = None,
    ) -> tuple[tuple[bool, list[str], list[str]], tuple[list[str], list[str], list[str]]]:
        """A pooled worker's completion (docs/dag.md "Workers"): apply the result of `node_id` as
        `apply_result` does (refused, changing nothing, when the lease was lost), then claim up to `refill`
        more with a lease as `_claim_leased` does; in one change."""
        worker = _worker(worker_id, required=False)
        lease = _lease(lease_s) if refill > 0 else 0.0
        attempts = self._max_attempts() if max_attempts is None else max_attempts

        def op() -> tuple[tuple[bool, list[str], list[str]], tuple[list[str], list[str], list[str]]]:
            applied = self._apply_result_op(node_id, outcome, worker, **payload)
            if refill <= 0:
                return applied, ([], [], [])
            return applied, self._claim_leased_op(refill, worker, lease, attempts)

        return self._apply(op)

    def propagate_failures(self) -> list[str]:
        return self._apply(lambda: self._engine.propagate_failures())  # noqa: PLW0108 (engine read late)

    def repair_leaves(self) -> list[str]:
        return self._apply(lambda: self._engine.repair_leaves())  # noqa: PLW0108 (engine read late)

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
        """One atomic runner step: apply, propagate failures, repair leaves (unless `leaf_repair=False`).
        With `worker_id`, refused with `dag.claim.lease_lost` (changing nothing) when that worker no longer
        holds the node."""
        worker = _worker(worker_id, required=False)
        return self._apply(
            lambda: self._apply_result_op(
                node_id, outcome, worker, message=message, content=content, output=output, metadata=metadata
            )
        )

    # ---- the engine steps the operations above are made of (run inside `_apply`) -----------------------

    def _claim_op(self, limit: int, worker: str | None, lease: float | None) -> list[str]:
        until = None if lease is None else self._now() + lease
        return dag_claim_leased(self._engine, limit, worker, until)

    def _claim_leased_op(
        self, limit: int, worker: str | None, lease: float, attempts: int
    ) -> tuple[list[str], list[str], list[str]]:
        reclaimed = dag_reclaim_expired(self._engine, self._now(), attempts)
        skipped = self._engine.propagate_failures()
        return reclaimed, skipped, self._claim_op(limit, worker, lease)

    def _apply_result_op(
        self,
        node_id: str,
        outcome: str,
        worker: str | None,
        *,
        message: object = None,
        content: Any = None,
        output: JSONDict | None = None,
        metadata: JSONDict | None = None,
    ) -> tuple[bool, list[str], list[str]]:
        if worker is not None:
            dag_check_lease(self._engine, node_id, worker)
        return self._engine.apply_result(
            node_id, outcome, message=message, content=content, output=output, metadata=metadata
        )

    def leaves(self, *, include_compressed: bool = False) -> list[str]:
        with self._lock:
            return self._engine.leaves(include_compressed=include_compressed)

    def node(self, node_id: str) -> JSONDict:
        with self._lock:
            return self._engine.node(node_id)

    def edge(self, edge_id: str) -> JSONDict:
        with self._lock:
            return self._engine.edge(edge_id)

    def nodes(self, *, include_compressed: bool = False) -> list[JSONDict]:
        with self._lock:
            return self._engine.nodes(include_compressed=include_compressed)

    def edges(self, *, include_compressed: bool = False) -> list[JSONDict]:
        with self._lock:
            return self._engine.edges(include_compressed=include_compressed)

    def context_for(self, node_id: str, *, mode: str = "preview") -> list[JSONDict]:
        with self._lock:
            return self._engine.context_for(node_id, mode=mode)

    def context_ids_for(self, node_id: str) -> list[str]:
        with self._lock:
            return self._engine.context_ids_for(node_id)

    def events(self) -> list[JSONDict]:
        with self._lock:
            return self._engine.events()

    def to_mermaid(self, *, include_compressed: bool = False, max_label_chars: int = 80) -> str:
        with self._lock:
            return self._engine.to_mermaid(
                include_compressed=include_compressed, max_label_chars=max_label_chars
            )

    def to_json(self) -> bytes:
        with self._lock:
            return self._engine.to_json()

    @classmethod
    def from_json(cls, data: bytes | str) -> Graph:
        return cls._adopt(DagEngine.from_json(data))

    def check_invariants(self) -> str | None:
        """Recomputes every derived index and structural rule; the first violation, or None."""
        with self._lock:
            return self._engine.check_invariants()
