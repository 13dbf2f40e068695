"""`Store`: where graphs outlive the process. Opened by URL; SQLite embedded, PostgreSQL for many hosts."""

from __future__ import annotations

import time
from types import TracebackType

from chainwarden._core import DagEngine
from chainwarden._secrets import mask_secrets
from chainwarden.dag.errors import invalid_argument
from chainwarden.dag.store.backend import Backend
from chainwarden.dag.store.bound import StoredGraph
from chainwarden.dag.store.url import parse

DEFAULT_MAX_ATTEMPTS = 3


class Store:
    """A durable home for DAGs: `create_graph` / `load` give graphs whose every change is committed."""

    __slots__ = ("_backend", "_max_attempts", "_url")

    def __init__(self, backend: Backend, url: str, max_attempts: int) -> None:
        self._backend = backend
        self._url = url
        self._max_attempts = max_attempts

    @classmethod
    def open(cls, url: str, *, max_attempts: int = DEFAULT_MAX_ATTEMPTS) -> Store:
        """`sqlite:///file.db`, `:memory:` or `postgresql://…`; creates the schema on first use."""
        if isinstance(max_attempts, bool) or not isinstance(max_attempts, int) or max_attempts < 1:
            raise invalid_argument("max_attempts must be an int >= 1")
        parsed = parse(url)
        backend: Backend
        if parsed.kind == "sqlite":
            from chainwarden.dag.store.sqlite import SqliteBackend  # noqa: PLC0415 - loaded when used

            backend = SqliteBackend(parsed.target)
        else:
            from chainwarden.dag.store.postgres import PostgresBackend  # noqa: PLC0415 - needs psycopg

            backend = PostgresBackend(parsed.target)
        return cls(backend, url, max_attempts)

    @property
    def max_attempts(self) -> int:
        return self._max_attempts

    def create_graph(self, graph_id: str | None = None) -> StoredGraph:
        """A new, empty graph committed at version 0; a `graph_id` already stored is refused."""
        gid = DagEngine(graph_id).graph_id  # the engine checks the id (and generates one when None)
        self._backend.create_graph(gid, time.time())
        return StoredGraph._bind(self, self._backend, gid, 0, ([], [], []))

    def load(self, graph_id: str) -> StoredGraph:
        """The graph at its latest committed version; `DagNotFoundError` for an unknown id."""
        if not isinstance(graph_id, str) or not graph_id:
            raise invalid_argument("graph_id must be a non-empty string")
        version, rows = self._backend.load(graph_id)
        return StoredGraph._bind(self, self._backend, graph_id, version, rows)

    def graph_ids(self) -> list[str]:
        return self._backend.graph_ids()

    def close(self) -> None:
        self._backend.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store.open({mask_secrets(self._url)!r})"  # docs/design.md §31
