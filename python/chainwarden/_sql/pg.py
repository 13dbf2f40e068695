"""PostgreSQL for every store: connections from a `psycopg_pool` pool, and the hot path's round trips at the
protocol level.

`round_trip` sends several statements and reads all their results in ONE round trip (libpq's pipeline
mode, driven through `psycopg.pq`: each statement prepared once per connection, then only bound and run).
psycopg's own pipeline costs a few hundred microseconds of Python per round trip, more than the server's
work for a small change (benches/README.md "Workers and the round-trip floor").
"""

from __future__ import annotations

import re
import select
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from chainwarden._secrets import mask_secrets
from chainwarden._sql.faults import Fault, Unreachable, classify
from chainwarden.errors import InvalidArgument

#: A statement parameter as libpq takes it: text bytes (or None for NULL).
Param = bytes | None


def psycopg_modules(what: str) -> tuple[Any, Any]:
    """psycopg and psycopg_pool: the `postgres` extra, imported when a PostgreSQL store is opened."""
    try:
        import psycopg  # noqa: PLC0415 - optional
        import psycopg_pool  # noqa: PLC0415 - optional
    except ImportError as exc:  # pragma: no cover - the development environment has both
        raise ImportError(
            f"{what} needs psycopg and psycopg_pool: pip install 'chainwarden[postgres]'"
        ) from exc
    return psycopg, psycopg_pool


class Pool:
    """A `psycopg_pool.ConnectionPool` of autocommit connections that recovers at once when its server is
    back. psycopg_pool waits longer and longer between reconnection attempts (1 s, 2 s, 4 s, ...), so after
    an outage it may keep callers waiting long after the server is up; here a caller that saw a connection
    fail (or found none) first probes the server with one direct connection: refused, it fails fast with
    `Unreachable`; answered, a fresh pool replaces the old one."""

    def __init__(
        self,
        dsn: str,
        *,
        name: str,
        max_size: int,
        connect_timeout_s: float,
        what: str,
        configure: Callable[[Any], None] | None = None,
    ) -> None:
        self._psycopg, self._psycopg_pool = psycopg_modules(what)
        self._dsn = dsn
        self._name = name
        self._max_size = max_size
        self._connect_timeout_s = connect_timeout_s
        self._configure = configure
        self._lock = threading.Lock()
        self._suspect = False
        self._closed = False
        self._pool = self._open()

    @property
    def where(self) -> str:
        return mask_secrets(self._dsn)

    @property
    def closed(self) -> bool:
        return self._closed

    def _open(self) -> Any:
        timeout = max(1, round(self._connect_timeout_s))  # libpq's connect_timeout is whole seconds
        pool = self._psycopg_pool.ConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self._max_size,
            kwargs={"autocommit": True, "connect_timeout": timeout},
            open=False,
            name=self._name,
            configure=self._configure,
            # The pool keeps trying to reconnect in the background for as long as its store lives.
            reconnect_timeout=365 * 86_400.0,
        )
        try:
            pool.open(wait=True, timeout=float(self._connect_timeout_s))
        except self._psycopg_pool.PoolTimeout:
            pool.close()
            self._probe()  # the pool hides libpq's reason: one direct attempt tells it
            raise Unreachable(f"cannot connect to {self.where}: no connection within the timeout") from None
        return pool

    def _probe(self) -> None:
        """One direct connection: raises `Unreachable` with libpq's reason when the server does not answer."""
        timeout = max(1, round(self._connect_timeout_s))
        try:
            self._psycopg.connect(self._dsn, connect_timeout=timeout).close()
        except self._psycopg.Error as exc:
            raise Unreachable(f"cannot connect to {self.where}: {mask_secrets(str(exc).strip())}") from None

    def lost(self) -> None:
        """A caller saw a connection of this pool fail: the next caller probes the server first."""
        self._suspect = True

    def _recover(self) -> None:
        with self._lock:
            if not self._suspect or self._closed:
                return
            self._probe()
            old, self._pool = self._pool, self._open()
            self._suspect = False
        # Connections handed out by the old pool are closed when they come back.
        old.close(timeout=0)

    def getconn(self, timeout: float | None = None) -> Any:
        """A connection, waiting at most `timeout` seconds; `Unreachable` when the server does not answer."""
        if timeout is None:
            timeout = self._connect_timeout_s
        timed_out = False
        while True:
            if self._closed:
                raise Unreachable(f"the connection pool of {self.where} is closed")
            if self._suspect:
                self._recover()  # raises Unreachable when the server is away
            pool = self._pool
            try:
                return pool.getconn(timeout=max(timeout, 0.001))
            except self._psycopg_pool.PoolTimeout:
                if timed_out:
                    raise
                timed_out = True
                self._suspect = True
            except self._psycopg_pool.PoolClosed:
                # Another caller's recovery replaced the pool this caller was asking (or waiting in line
                # at) and closed it: the server is back, so the new pool serves this caller too. Escaping
                # as it is, this transient fault would fail the caller's change for good (a worker's
                # result dropped, its lease left to run out) though nothing was sent.
                if pool is self._pool and not self._closed:
                    raise

    def putconn(self, conn: Any) -> None:
        if conn.closed or conn.broken:
            self._suspect = True
        pool = self._pool
        try:
            pool.putconn(conn)
        except (ValueError, self._psycopg_pool.PoolClosed):  # from a pool replaced since, or closed
            conn.close()

    @contextmanager
    def connection(self, timeout: float | None = None) -> Iterator[Any]:
        """A pooled connection for the block; a connection fault inside it makes the next caller probe."""
        conn = self.getconn(timeout)
        try:
            yield conn
        except Exception as exc:
            if classify(exc) in (Fault.CONNECTION, Fault.AMBIGUOUS) or conn.closed:
                self._suspect = True
            raise
        finally:
            self.putconn(conn)

    def close(self) -> None:
        self._closed = True
        self._pool.close()


@dataclass(frozen=True, slots=True)
class Statement:
    """SQL prepared once per connection under `name`. Written in the one parameter style with named markers
    (`%(graph)s`), each cast where its type matters; sent as libpq's `$1`, `$2`, ... in `names` order."""

    name: bytes
    sql: bytes
    names: tuple[str, ...]

    @classmethod
    def of(cls, name: str, sql: str) -> Statement:
        names: list[str] = []

        def number(match: re.Match[str]) -> str:
            if match.group(1) not in names:
                names.append(match.group(1))
            return f"${names.index(match.group(1)) + 1}"

        return cls(f"cw_{name}".encode(), _NAMED.sub(number, sql).encode(), tuple(names))

    def bind(self, params: Mapping[str, Param]) -> tuple[Statement, list[Param]]:
        """This statement with its parameters in order, as a step of `round_trip`."""
        return self, [params[name] for name in self.names]


_NAMED = re.compile(r"%\((\w+)\)s")

# Which statements each connection has prepared (psycopg connections accept no attributes of ours).
_PREPARED: weakref.WeakKeyDictionary[Any, set[bytes]] = weakref.WeakKeyDictionary()

#: A step of a round trip: a prepared statement with its parameters, or plain SQL without any (BEGIN, COMMIT).
Step = tuple[Statement, Sequence[Param]] | bytes


def round_trip(conn: Any, steps: Sequence[Step]) -> list[Any]:
    """Runs `steps` in one round trip on `conn` (a psycopg connection in autocommit mode, idle) and returns
    one `PGresult` per step. The first failing step raises its psycopg error once the round trip is read to
    its end (later steps did not run); a broken connection raises `psycopg.OperationalError` and is closed.
    """
    import psycopg  # noqa: PLC0415 - only reached when a PostgreSQL store is open

    pq = psycopg.pq
    pgconn = conn.pgconn
    prepared = _PREPARED.setdefault(conn, set())
    # What each result libpq returns belongs to: a step (None) or the Prepare of a statement.
    owners: list[bytes | None] = []
    try:
        pgconn.enter_pipeline_mode()
        try:
            for step in steps:
                if isinstance(step, bytes):
                    pgconn.send_query_params(step, None)
                else:
                    statement, params = step
                    if statement.name not in prepared and statement.name not in owners:
                        pgconn.send_prepare(statement.name, statement.sql)
                        owners.append(statement.name)
                    pgconn.send_query_prepared(statement.name, params)
                owners.append(None)
            pgconn.pipeline_sync()
            results, error = _read(pgconn, pq, owners, prepared, conn.info.encoding)
        finally:
            if pgconn.status == pq.ConnStatus.OK and pgconn.pipeline_status != pq.PipelineStatus.OFF:
                pgconn.exit_pipeline_mode()
    except psycopg.OperationalError:
        _PREPARED.pop(conn, None)
        conn.close()
        raise
    if error is not None:
        raise error
    return results


def _read(
    pgconn: Any, pq: Any, owners: list[bytes | None], prepared: set[bytes], encoding: str
) -> tuple[list[Any], Any]:
    import psycopg  # noqa: PLC0415

    while pgconn.flush():
        _wait(pgconn.socket, read=False)
    results: list[Any] = []
    error: Any = None
    ok = (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK)
    index = 0
    while True:
        while pgconn.is_busy():
            _wait(pgconn.socket, read=True)
            pgconn.consume_input()
        result = pgconn.get_result()
        if result is None:
            continue  # the end of one statement's results: the next one follows
        status = result.status
        if status == pq.ExecStatus.PIPELINE_SYNC:
            return results, error
        owner = owners[index] if index < len(owners) else None
        index += 1
        if status in ok:
            if owner is not None:
                prepared.add(owner)
            else:
                results.append(result)
        elif status != pq.ExecStatus.PIPELINE_ABORTED and error is None:
            error = psycopg.errors.error_from_result(result, encoding=encoding)


def _wait(fd: int, *, read: bool) -> None:
    if read:
        select.select([fd], [], [])
    else:
        select.select([], [fd], [])


def text(value: object) -> bytes:
    """A parameter in PostgreSQL's text format."""
    return str(value).encode()


class Listener:
    """A dedicated connection LISTENing on `channel` (outside any pool: it is held for as long as it
    listens). `wait(timeout)` returns the payloads notified since the last call, or None when it had to
    (re)connect — notifications may have been missed then, so the caller looks for itself."""

    def __init__(self, dsn: str, channel: str, *, what: str) -> None:
        if not channel.isidentifier():
            raise InvalidArgument(f"channel must be an identifier, got {channel!r}", argument="channel")
        self._psycopg, _ = psycopg_modules(what)
        self._dsn = dsn
        self._channel = channel
        self._conn: Any = None

    def _connect(self) -> None:
        conn = self._psycopg.connect(self._dsn, autocommit=True, connect_timeout=10)
        conn.execute(f"LISTEN {self._channel}")
        self._conn = conn

    def wait(self, timeout: float) -> list[str] | None:
        try:
            if self._conn is None or self._conn.closed:
                self._connect()
                return None
            return [n.payload for n in self._conn.notifies(timeout=timeout, stop_after=1)]
        except self._psycopg.Error:
            self.close()
            time.sleep(min(timeout, 1.0))  # a server that is away is not asked again at once
            return None

    def woken(self, timeout: float) -> bool:
        """`wait`, asked only whether to look: True once something was notified, or after a (re)connect —
        notifications sent while nobody listened are found by the caller's next look."""
        payloads = self.wait(timeout)
        return payloads is None or bool(payloads)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
