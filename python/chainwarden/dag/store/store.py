"""`Store`: where graphs outlive the process. Opened by URL; SQLite embedded, PostgreSQL for many hosts."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from types import TracebackType
from typing import Any

from chainwarden._core import DagEngine
from chainwarden._secrets import mask_secrets
from chainwarden.dag.errors import invalid_argument
from chainwarden.dag.store.backend import Backend, Loaded, WorkIndex
from chainwarden.dag.store.bound import StoredGraph
from chainwarden.dag.store.url import parse

DEFAULT_MAX_ATTEMPTS = 3
DEFAULT_RETRY_TIMEOUT_S = 10.0
DEFAULT_POOL_SIZE = 8


class Store:
    """A durable home for DAGs: `create_graph` / `load` give graphs whose every change is committed."""

    __slots__ = ("_backend", "_max_attempts", "_url")

    def __init__(self, backend: Backend, url: str, max_attempts: int) -> None:
        self._backend = backend
        self._url = url
        self._max_attempts = max_attempts

    @classmethod
    def open(
        cls,
        url: str,
        *,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        retry_timeout_s: float = DEFAULT_RETRY_TIMEOUT_S,
        pool_size: int = DEFAULT_POOL_SIZE,
    ) -> Store:
        """`sqlite:///file.db`, `:memory:` or `postgresql://…`; creates (or upgrades) the schema on first use.

        `retry_timeout_s`: how long a change whose connection was lost before it landed is tried again (a
        restarting server), and how long a lost commit is looked for. `pool_size`: PostgreSQL connections at
        most (a `WorkerPool` uses one per execution slot that is committing, plus one to listen)."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise invalid_argument("max_attempts must be an int >= 1", argument="max_attempts")
        if (
            isinstance(retry_timeout_s, bool)
            or not isinstance(retry_timeout_s, (int, float))
            or not math.isfinite(retry_timeout_s)
            or not 0 <= retry_timeout_s <= 86_400
        ):
            raise invalid_argument(
                "retry_timeout_s must be a number of seconds between 0 and 86400", argument="retry_timeout_s"
            )
        if isinstance(pool_size, bool) or not isinstance(pool_size, int) or not 1 <= pool_size <= 1000:
            raise invalid_argument("pool_size must be an int between 1 and 1000", argument="pool_size")
        parsed = parse(url)
        backend: Backend
        options: dict[str, Any] = {"retry_timeout_s": float(retry_timeout_s), "pool_size": pool_size}
        if parsed.kind == "sqlite":
            from chainwarden.dag.store.sqlite import SqliteBackend  # noqa: PLC0415 - loaded when used

            backend = SqliteBackend(parsed.target, **options)
        else:
            from chainwarden.dag.store.postgres import PostgresBackend  # noqa: PLC0415 - needs psycopg

            backend = PostgresBackend(parsed.target, **options)
        return cls(backend, url, max_attempts)

    @property
    def max_attempts(self) -> int:
        return self._max_attempts

    @property
    def url(self) -> str:
        """The store's URL, its password (if any) shown as `***`."""
        return mask_secrets(self._url)

    def create_graph(self, graph_id: str | None = None, *, leaf_repair: bool = True) -> StoredGraph:
        """A new, empty graph committed at version 0; a `graph_id` already stored is refused.
        `leaf_repair=False`: a task workflow, whose finished tasks stay leaves (docs/dag.md "Leaves")."""
        if not isinstance(leaf_repair, bool):
            raise invalid_argument("leaf_repair must be a bool", argument="leaf_repair")
        gid = DagEngine(graph_id).graph_id  # the engine checks the id (and generates one when None)
        self._backend.create_graph(gid, time.time(), leaf_repair=leaf_repair)
        return StoredGraph._bind(self, self._backend, gid, Loaded(0, leaf_repair, ([], [], [])))

    def load(self, graph_id: str) -> StoredGraph:
        """The graph at its latest committed version, read from one snapshot; `DagNotFoundError` for an
        unknown id."""
        if not isinstance(graph_id, str) or not graph_id:
            raise invalid_argument("graph_id must be a non-empty string", argument="graph_id")
        backend = self._backend
        return StoredGraph._bind(self, backend, graph_id, backend.reading(lambda: backend.load(graph_id)))

    def graph_ids(self) -> list[str]:
        return self._backend.reading(self._backend.graph_ids)

    def _work(self, graph_ids: Sequence[str] | None, limit: int) -> WorkIndex:
        """Graphs with claimable nodes or run-out leases (the workers' index, docs/dag.md "Workers")."""
        return self._backend.reading(lambda: self._backend.work(graph_ids, limit))

    def _listen(self) -> Any:
        return self._backend.listen()

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store.open({self.url!r})"  # docs/design.md §31: the password as ***
