"""PostgreSQL (psycopg 3, connections from a `psycopg_pool` pool): many processes and hosts; a change locks
the graph's row (`SELECT … FOR UPDATE`), so different graphs never wait on each other.

A change is two round trips, the floor for a change that must see the latest version before it is decided:
`BEGIN` + the row lock + the rows newer than the caller's version + the database's clock in one, and one
statement writing every delta row, the change id, the new version and the work summary + `COMMIT` in the other
(`chainwarden._sql.pg.round_trip`: prepared statements, one pipeline). A commit whose outcome the broken
connection did not tell is resolved by the change id (docs/design.md §33).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from chainwarden._secrets import mask_secrets
from chainwarden._sql import Fault, Unreachable, classify, ensure, pg
from chainwarden._sql.pg import Param, Pool, Statement, psycopg_modules, round_trip, text
from chainwarden.dag.store.backend import (
    Backend,
    GraphWork,
    Loaded,
    Rows,
    Tx,
    Work,
    WorkIndex,
    events_to_json,
    rows_to_json,
)
from chainwarden.dag.store.errors import (
    StoreCommitUnknownError,
    StoreConflictError,
    StoreConnectionError,
    StoreError,
    StoreSchemaError,
    graph_not_found,
)
from chainwarden.dag.store.schema import CHANGES_KEPT, SCHEMA

#: The channel a commit that made work claimable notifies (payload: the graph id).
CHANNEL = "chainwarden_dag"
#: The database's clock, epoch seconds.
NOW = "extract(epoch FROM clock_timestamp())::float8"
#: How long connecting (or waiting for a pooled connection) may take.
CONNECT_TIMEOUT_S = 10.0
#: A transaction left open by a client that vanished would hold its graph's row lock until the server notices;
#: this bounds it (a change's transaction is open only while its caller decides what to write).
IDLE_IN_TRANSACTION_S = 120

LOCK = Statement.of(
    "dag_lock",
    "SELECT version, leaf_repair, claimable, running, lease_due FROM chainwarden_dag_graphs "
    "WHERE graph_id = %(g)s FOR UPDATE",
)
# Read after the lock is held (a later statement, so a later snapshot): every change committed before ours.
_SINCE = " UNION ALL ".join(
    f"SELECT {kind}, seq, record FROM chainwarden_dag_{table} "
    "WHERE graph_id = %(g)s AND version > %(v)s::bigint"
    for kind, table in enumerate(("nodes", "edges", "events"))
)
CATCH_UP = Statement.of(
    "dag_catch_up", f"SELECT -1, 0::bigint, {NOW}::text UNION ALL ({_SINCE}) ORDER BY 1, 2"
)
# One statement, so one snapshot: the version and the rows newer than the caller's (`refresh`).
READ_SINCE = Statement.of(
    "dag_read_since",
    "SELECT -1, version, NULL FROM chainwarden_dag_graphs WHERE graph_id = %(g)s "
    f"UNION ALL ({_SINCE}) ORDER BY 1, 2",
)


def _upsert(table: str, key: str, rows: str) -> str:
    """Rows `[[seq, "id", record], ...]` (a JSON parameter) into a node or edge table."""
    return (
        f"INSERT INTO chainwarden_dag_{table} (graph_id, seq, {key}, version, record) "
        "SELECT %(g)s, (r->>0)::bigint, r->>1, %(v)s::bigint, (r->2)::text "
        f"FROM json_array_elements(%({rows})s::json) r "
        "ON CONFLICT (graph_id, seq) DO UPDATE SET record = excluded.record, version = excluded.version"
    )


# Every row of the change, its id, the version and the work summary in one statement (data-modifying WITH
# parts always run), and a notification when it made work claimable (sent by the server at COMMIT).
WRITE = Statement.of(
    "dag_write",
    f"WITH n AS ({_upsert('nodes', 'node_id', 'n')}), e AS ({_upsert('edges', 'edge_id', 'e')}), "
    "ev AS (INSERT INTO chainwarden_dag_events (graph_id, seq, version, record) "
    "SELECT %(g)s, (r->>0)::bigint, %(v)s::bigint, (r->1)::text FROM json_array_elements(%(ev)s::json) r), "
    "c AS (INSERT INTO chainwarden_dag_changes (graph_id, version, change_id) "
    "VALUES (%(g)s, %(v)s::bigint, %(c)s)), "
    "p AS (DELETE FROM chainwarden_dag_changes "
    f"WHERE graph_id = %(g)s AND version = %(v)s::bigint - {CHANGES_KEPT}), "
    "u AS (UPDATE chainwarden_dag_graphs SET version = %(v)s::bigint, claimable = %(claimable)s::int, "
    "running = %(running)s::int, lease_due = %(due)s::float8 WHERE graph_id = %(g)s) "
    f"SELECT pg_notify('{CHANNEL}', %(g)s) WHERE %(notify)s::bool",
)
SUMMARY = Statement.of(
    "dag_summary",
    "WITH u AS (UPDATE chainwarden_dag_graphs SET claimable = %(claimable)s::int, "
    "running = %(running)s::int, lease_due = %(due)s::float8 WHERE graph_id = %(g)s) "
    f"SELECT pg_notify('{CHANNEL}', %(g)s) WHERE %(notify)s::bool",
)
RESOLVE = Statement.of(
    "dag_resolve",
    "SELECT count(*) FROM chainwarden_dag_changes WHERE graph_id = %(g)s AND version = %(v)s::bigint "
    "AND change_id = %(c)s",
)
CREATE = Statement.of(
    "dag_create",
    "INSERT INTO chainwarden_dag_graphs (graph_id, version, created_at, leaf_repair) "
    "VALUES (%(g)s, 0, %(at)s::float8, %(leaf)s::bool) ON CONFLICT (graph_id) DO NOTHING RETURNING 1",
)
_SERVED = "(%(ids)s::json IS NULL OR graph_id IN (SELECT json_array_elements_text(%(ids)s::json)))"
WORK = Statement.of(
    "dag_work",
    f"SELECT graph_id, claimable, lease_due IS NOT NULL AND lease_due <= n.now, n.now "
    f"FROM (SELECT {NOW} AS now) n LEFT JOIN LATERAL (SELECT graph_id, claimable, lease_due "
    f"FROM chainwarden_dag_graphs WHERE (claimable > 0 OR lease_due <= n.now) AND {_SERVED} "
    "ORDER BY random() LIMIT %(limit)s::int) g ON true",
)
LEASED = Statement.of(
    "dag_leased",
    f"SELECT EXISTS (SELECT 1 FROM chainwarden_dag_graphs WHERE lease_due IS NOT NULL AND {_SERVED})",
)
_TRUE, _FALSE = b"true", b"false"


def _float(value: float | None) -> Param:
    return None if value is None else repr(float(value)).encode()


class PostgresBackend(Backend):
    def __init__(self, target: str, *, retry_timeout_s: float, pool_size: int) -> None:
        super().__init__(target, retry_timeout_s=retry_timeout_s, pool_size=pool_size)
        self._psycopg, _ = psycopg_modules("PostgreSQL stores")
        self._where = mask_secrets(target)  # docs/design.md §31: the only form of the URL ever shown
        try:
            self._pool = Pool(
                target,
                name="chainwarden-dag",
                max_size=pool_size,
                connect_timeout_s=CONNECT_TIMEOUT_S,
                what="PostgreSQL stores",
                configure=_configure,
            )
        except Unreachable as exc:
            raise StoreConnectionError(
                f"cannot connect to the PostgreSQL store: {mask_secrets(str(exc))}"
            ) from None
        try:
            with self._pool.connection(CONNECT_TIMEOUT_S) as conn:
                ensure(conn, SCHEMA, too_new=_too_new)
        except self._psycopg.Error as exc:
            self._pool.close()
            raise StoreConnectionError(f"PostgreSQL store {self._where}: {mask_secrets(str(exc))}") from exc
        except BaseException:
            self._pool.close()
            raise

    def close(self) -> None:
        self._pool.close()

    # ---- connections and errors ---------------------------------------------------------------------------

    def _get(self) -> Any:
        """A pooled connection; waits for one as long as connecting may take (a restarting server)."""
        if self._pool.closed:
            raise StoreError("the store is closed")
        try:
            return self._pool.getconn(CONNECT_TIMEOUT_S)
        except Unreachable as exc:
            raise StoreConnectionError(f"PostgreSQL store: {mask_secrets(str(exc))}") from None

    def _put(self, conn: Any) -> None:
        self._pool.putconn(conn)

    def _failed(self, exc: BaseException) -> StoreError:
        """A driver error before anything could land (nothing was committed)."""
        if classify(exc).transient:
            return StoreConnectionError(
                f"lost the connection to the PostgreSQL store {self._where}: {mask_secrets(str(exc))}"
            )
        return StoreError(f"PostgreSQL store {self._where}: {mask_secrets(str(exc))}")

    def _run(self, steps: Sequence[Any]) -> list[Any]:
        """One round trip on a pooled connection, outside any transaction of ours."""
        conn = self._get()
        try:
            return round_trip(conn, steps)
        except self._psycopg.Error as exc:
            raise self._failed(exc) from exc
        finally:
            self._put(conn)

    # ---- whole-store operations ---------------------------------------------------------------------------

    def create_graph(self, graph_id: str, at: float, *, leaf_repair: bool) -> None:
        (res,) = self._run(
            [
                CREATE.bind(
                    {"g": graph_id.encode(), "at": _float(at), "leaf": _TRUE if leaf_repair else _FALSE}
                )
            ]
        )
        if res.ntuples == 0:
            raise StoreConflictError(f"graph {graph_id!r} already exists in the store")

    def graph_ids(self) -> list[str]:
        conn = self._get()
        try:
            rows = conn.execute("SELECT graph_id FROM chainwarden_dag_graphs ORDER BY graph_id").fetchall()
        except self._psycopg.Error as exc:
            raise self._failed(exc) from exc
        finally:
            self._put(conn)
        return [r[0] for r in rows]

    def load(self, graph_id: str) -> Loaded:
        conn = self._get()
        try:
            cur = conn.cursor()
            # One snapshot for the version and every row (docs/design.md §33): READ COMMITTED would give each
            # statement its own, and a writer committing between them would mix two versions.
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            try:
                cur.execute(
                    "SELECT version, leaf_repair FROM chainwarden_dag_graphs WHERE graph_id = %s", (graph_id,)
                )
                row = cur.fetchone()
                if row is None:
                    raise graph_not_found(graph_id)
                rows = _every_row(cur, graph_id)
            finally:
                if not conn.closed:
                    cur.execute("COMMIT")
            return Loaded(int(row[0]), bool(row[1]), rows)
        except self._psycopg.Error as exc:
            raise self._failed(exc) from exc
        finally:
            self._put(conn)

    def read_since(self, graph_id: str, version: int) -> tuple[int, Rows]:
        (res,) = self._run([READ_SINCE.bind({"g": graph_id.encode(), "v": text(version)})])
        if res.ntuples == 0 or res.get_value(0, 0) != b"-1":
            raise graph_not_found(graph_id)
        return int(res.get_value(0, 1)), _split(res, 1)

    def work(self, graph_ids: Sequence[str] | None, limit: int) -> WorkIndex:
        ids = None if graph_ids is None else json.dumps(list(graph_ids)).encode()
        found, leased = self._run([WORK.bind({"ids": ids, "limit": text(limit)}), LEASED.bind({"ids": ids})])
        graphs = []
        now = float(found.get_value(0, 3))
        for i in range(found.ntuples):
            gid = found.get_value(i, 0)
            if gid is not None:
                graphs.append(
                    GraphWork(gid.decode(), int(found.get_value(i, 1)), found.get_value(i, 2) == b"t")
                )
        return WorkIndex(now, graphs, leased.get_value(0, 0) == b"t")

    def listen(self) -> pg.Listener:
        return pg.Listener(self._target, CHANNEL, what="PostgreSQL stores")

    # ---- changes ------------------------------------------------------------------------------------------

    @contextmanager
    def change(self, graph_id: str, seen: int) -> Iterator[Tx]:
        conn = self._get()
        open_tx = False
        try:
            gid = graph_id.encode()
            try:
                _, lock, rows = round_trip(
                    conn, [b"BEGIN", LOCK.bind({"g": gid}), CATCH_UP.bind({"g": gid, "v": text(seen)})]
                )
            except self._psycopg.Error as exc:
                raise self._failed(exc) from exc
            open_tx = True
            if lock.ntuples == 0:
                raise graph_not_found(graph_id)
            version = int(lock.get_value(0, 0))
            due = lock.get_value(0, 4)
            tx = Tx(
                graph_id,
                version,
                float(rows.get_value(0, 2)),
                lock.get_value(0, 1) == b"t",
                Work(
                    int(lock.get_value(0, 2)), int(lock.get_value(0, 3)), None if due is None else float(due)
                ),
                _every_row=lambda: _every_row(conn.cursor(), graph_id),
            )
            if version != seen:
                tx.caught_up = _split(rows, 1)
            yield tx
            if tx.new_work is None:
                round_trip(conn, [b"ROLLBACK"])
                open_tx = False
                return
            self._commit(conn, tx)
            open_tx = False
        except BaseException:
            if open_tx and not conn.closed:
                # A connection that broke has nothing to roll back: the server does it by itself.
                with contextlib.suppress(self._psycopg.Error):
                    round_trip(conn, [b"ROLLBACK"])
            raise
        finally:
            self._put(conn)

    def _commit(self, conn: Any, tx: Tx) -> None:
        work = tx.new_work
        assert work is not None
        args: dict[str, Param] = {
            "g": tx.graph_id.encode(),
            "claimable": text(work.claimable),
            "running": text(work.running),
            "due": _float(work.lease_due),
            "notify": _TRUE if tx.notify else _FALSE,
        }
        if tx.delta is None:
            step = SUMMARY.bind(args)
        else:
            delta = tx.delta
            args |= {
                "v": text(tx.version + 1),
                "n": rows_to_json(delta.nodes),
                "e": rows_to_json(delta.edges),
                "ev": events_to_json(delta.events),
                "c": tx.change_id.encode(),
            }
            step = WRITE.bind(args)
        try:
            round_trip(conn, [step, b"COMMIT"])
        except self._psycopg.Error as exc:
            if classify(exc, committing=True) is not Fault.AMBIGUOUS:
                raise StoreError(f"PostgreSQL store {self._where}: {mask_secrets(str(exc))}") from exc
            if tx.delta is None:
                # Only the work summary was at stake; the next change writes it again.
                raise StoreConnectionError(
                    f"lost the connection to the PostgreSQL store {self._where}: {mask_secrets(str(exc))}"
                ) from exc
            if not self._landed(tx, exc):
                raise StoreConnectionError(
                    f"lost the connection to the PostgreSQL store {self._where} while committing change "
                    f"{tx.change_id} of graph {tx.graph_id!r}; it did not land (nothing was written): "
                    f"{mask_secrets(str(exc))}"
                ) from exc

    def _landed(self, tx: Tx, lost: BaseException) -> bool:
        """Whether the change whose COMMIT was in flight when the connection broke is committed. The graph's
        row is locked first: a server still finishing that transaction holds it until it is decided."""
        deadline = time.monotonic() + self.retry_timeout_s
        backoff = 0.05
        args = {"g": tx.graph_id.encode(), "v": text(tx.version + 1), "c": tx.change_id.encode()}
        while True:
            try:
                conn = self._pool.getconn(max(deadline - time.monotonic(), 0.001))
                try:
                    res = round_trip(
                        conn,
                        [
                            b"BEGIN",
                            b"SET LOCAL lock_timeout = '2s'",
                            LOCK.bind(args),
                            RESOLVE.bind(args),
                            b"ROLLBACK",
                        ],
                    )
                finally:
                    self._put(conn)
                return int(res[3].get_value(0, 0)) == 1
            except (self._psycopg.Error, Unreachable) as exc:
                if time.monotonic() + backoff >= deadline:
                    raise StoreCommitUnknownError(
                        f"lost the connection to the PostgreSQL store {self._where} while committing change "
                        f"{tx.change_id} of graph {tx.graph_id!r}, and could not find out within "
                        f"{self.retry_timeout_s:g} s whether it landed ({mask_secrets(str(exc))}); the graph "
                        "reloads before its next call"
                    ) from lost
                time.sleep(backoff)
                backoff = min(backoff * 2, 1.0)


def _configure(conn: Any) -> None:
    conn.execute(f"SET idle_in_transaction_session_timeout = '{IDLE_IN_TRANSACTION_S}s'")


def _every_row(cur: Any, graph_id: str) -> Rows:
    # Every row, in whatever order the database finds them: the bulk load puts them in arena order
    # (`dag/bulk.rs`), so PostgreSQL never sorts (with stale statistics it sorted on disk).
    out = []
    for table in ("chainwarden_dag_nodes", "chainwarden_dag_edges", "chainwarden_dag_events"):
        cur.execute(f"SELECT seq, record FROM {table} WHERE graph_id = %s", (graph_id,))
        out.append(cur.fetchall())
    return out[0], out[1], out[2]


def _split(res: Any, start: int) -> Rows:
    out: Rows = ([], [], [])
    value = res.get_value
    for i in range(start, res.ntuples):
        out[int(value(i, 0))].append((int(value(i, 1)), value(i, 2).decode()))
    return out


def _too_new(found: int) -> StoreSchemaError:
    return StoreSchemaError(
        f"the store has DAG schema version {found}; this chainwarden reads version {SCHEMA.version} or older"
    )
