"""The one SQL layer (chainwarden._sql): secrets masked, errors classified, one parameter style, schema
versions — checked on real SQLite files and the real PostgreSQL server."""

from __future__ import annotations

import contextlib
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from postgres_server import postgres_dsn

from chainwarden._secrets import mask_secrets as masked
from chainwarden._sql import Fault, Schema, Unreachable, classify, ensure, qmark
from chainwarden._sql.pg import Pool
from chainwarden._sql.sqlite import connect


@pytest.mark.parametrize(
    ("target", "shown"),
    [
        ("postgresql://app:s3cret@db:5432/chat", "postgresql://app:***@db:5432/chat"),
        ("postgres://app:p%40ss@db/chat?sslmode=require", "postgres://app:***@db/chat?sslmode=require"),
        (
            "postgresql://app@db/chat?password=s3cret&sslmode=x",
            "postgresql://app@db/chat?password=***&sslmode=x",
        ),
        ("host=db user=app password=s3cret dbname=chat", "host=db user=app password=*** dbname=chat"),
        ("host=db password = 'a b\\' c' dbname=chat", "host=db password = *** dbname=chat"),
        ("redis://:s3cret@127.0.0.1:6379/0", "redis://:***@127.0.0.1:6379/0"),
        ("sqlite:///tmp/x.db", "sqlite:///tmp/x.db"),
        ("postgresql://app@db/chat", "postgresql://app@db/chat"),
    ],
)
def test_passwords_are_masked(target: str, shown: str) -> None:
    assert masked(target) == shown
    assert "s3cret" not in masked(target)


def test_errors_are_classified() -> None:
    assert classify(sqlite3.OperationalError("database is locked")) is Fault.LOCK
    assert classify(sqlite3.IntegrityError("UNIQUE constraint failed")) is Fault.PERMANENT
    assert classify(Unreachable("down")) is Fault.CONNECTION
    assert classify(ValueError("x")) is Fault.PERMANENT
    lost = psycopg.OperationalError("server closed the connection unexpectedly")
    assert classify(lost) is Fault.CONNECTION
    assert classify(lost, committing=True) is Fault.AMBIGUOUS
    assert classify(psycopg.errors.DeadlockDetected("x")) is Fault.LOCK
    assert classify(psycopg.errors.SerializationFailure("x"), committing=True) is Fault.LOCK
    assert classify(psycopg.errors.UniqueViolation("x"), committing=True) is Fault.PERMANENT
    assert Fault.LOCK.transient and Fault.CONNECTION.transient
    assert not Fault.AMBIGUOUS.transient and not Fault.PERMANENT.transient
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        with pytest.raises(psycopg.Error) as info:
            conn.execute("SELECT pg_terminate_backend(pg_backend_pid())")
        assert classify(info.value) is Fault.CONNECTION


def test_one_parameter_style() -> None:
    assert qmark("SELECT %s, %s FROM t WHERE a = %s") == "SELECT ?, ? FROM t WHERE a = ?"
    with contextlib.closing(connect(":memory:", timeout_s=1)) as conn:
        conn.execute("CREATE TABLE t (a, b)")
        conn.executemany("INSERT INTO t VALUES (%s, %s)", [(1, "x"), (2, "y")])
        assert conn.execute("SELECT b FROM t WHERE a = %s", (2,)).fetchall() == [("y",)]
        assert conn.cursor().execute("SELECT count(*) FROM t WHERE a > %s", (0,)).fetchone() == (2,)


STEPS = (
    ["CREATE TABLE IF NOT EXISTS thing (id INTEGER PRIMARY KEY)"],
    ["ALTER TABLE thing ADD COLUMN name TEXT"],
)


def too_new(found: int) -> Exception:
    return RuntimeError(f"version {found} is too new")


def test_schema_versions_on_sqlite(tmp_path: Path) -> None:
    path = str(tmp_path / "s.db")
    # Closed at the end: Python 3.13 warns of a SQLite connection collected unclosed.
    with contextlib.closing(connect(path, timeout_s=1)) as conn:
        assert ensure(conn, Schema("thing", STEPS[:1]), too_new=too_new) == 0
        conn.execute("INSERT INTO thing (id) VALUES (1)")
        # An upgrade runs only the missing step, keeps the data, records the version.
        assert ensure(conn, Schema("thing", STEPS), too_new=too_new) == 1
        assert conn.execute("SELECT id, name FROM thing").fetchall() == [(1, None)]
        assert ensure(conn, Schema("thing", STEPS), too_new=too_new) == 2  # current: nothing to do
        # An older chainwarden refuses a newer database and changes nothing.
        with pytest.raises(RuntimeError, match="version 2 is too new"):
            ensure(conn, Schema("thing", STEPS[:1]), too_new=too_new)
        rows = conn.execute("SELECT component, version FROM chainwarden_schema").fetchall()
        assert rows == [("thing", 2)]


def test_schema_versions_on_postgres_and_a_legacy_database() -> None:
    schema = f"sv_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(postgres_dsn(), autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
        conn.execute(f'SET search_path TO "{schema}"')
        conn.execute("CREATE TABLE thing (id INTEGER PRIMARY KEY)")  # made before versions were kept
        legacy = Schema("thing", STEPS, legacy=lambda cur: 1)
        assert ensure(conn, legacy, too_new=too_new) == 1
        assert conn.execute("SELECT name FROM thing").fetchall() == []
        assert conn.execute("SELECT version FROM chainwarden_schema").fetchone() == (2,)


def test_a_pool_names_the_server_without_its_password(tmp_path: Path) -> None:
    with pytest.raises(Unreachable) as info:
        Pool(
            f"postgresql://app:s3cret@/db?host={tmp_path}",
            name="t",
            max_size=1,
            connect_timeout_s=1,
            what="test",
        )
    assert "app:***@" in str(info.value) and "s3cret" not in str(info.value)


def test_a_caller_waiting_on_a_pool_that_recovery_replaced_gets_a_connection_from_the_new_one() -> None:
    """After a server restart the first caller to find the pool suspect replaces it with a fresh one and
    closes the old: a caller still waiting in the old pool's line is served by the new pool, instead of
    failing with the old pool's PoolClosed (which no store retried)."""
    pool = Pool(postgres_dsn(), name="t", max_size=1, connect_timeout_s=5, what="test")
    held = pool.getconn()
    got: list[object] = []

    def wait_in_line() -> None:
        try:
            got.append(pool.getconn(10))
        except Exception as exc:
            got.append(exc)

    waiter = threading.Thread(target=wait_in_line)
    try:
        waiter.start()
        deadline = time.monotonic() + 10
        while pool._pool.get_stats().get("requests_waiting", 0) < 1:  # in line for the one connection
            assert time.monotonic() < deadline and waiter.is_alive(), got
            time.sleep(0.01)
        pool.lost()  # a caller saw a connection fail (the server restarted)
        fresh = pool.getconn(5)  # the next caller recovers: a new pool, the old one closed
        pool.putconn(fresh)
        waiter.join(10)
        assert len(got) == 1 and isinstance(got[0], psycopg.Connection), got
        assert got[0].execute("SELECT 1").fetchone() == (1,)
        pool.putconn(got[0])
    finally:
        pool.putconn(held)
        waiter.join(10)
        pool.close()


def test_one_listener_for_every_store() -> None:
    """Both PostgreSQL stores that notify (the DAG store's claimable work, the ledger's run events) listen
    through the SQL layer's one `Listener`; `woken` is the DAG pool's question: a (re)connect or a notice."""
    from chainwarden._sql import pg  # noqa: PLC0415
    from chainwarden.billing import PostgresLedger  # noqa: PLC0415
    from chainwarden.billing.run_store import CHANNEL  # noqa: PLC0415
    from chainwarden.dag import Store  # noqa: PLC0415

    dsn = postgres_dsn()
    schema = f"ln_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    info = psycopg.conninfo.conninfo_to_dict(dsn)
    url = f"postgresql://{info.get('user', 'postgres')}@/{info.get('dbname', 'postgres')}?host={info['host']}"
    url += f"&port={info.get('port', 5432)}&options=-csearch_path%3D{schema}"
    with Store.open(url) as store:
        listener = store._listen()
        assert type(listener) is pg.Listener
        try:
            assert listener.woken(0.1)  # connected just now: whatever came before is looked for
            assert not listener.woken(0.1)  # nothing since
            with store.create_graph("g", leaf_repair=False).mutate() as m:
                m.create_node("task", node_id="t")
            assert listener.woken(5.0)
        finally:
            listener.close()
    ledger = PostgresLedger(f"{dsn} options=-csearch_path={schema}")
    try:
        assert type(ledger.listen(CHANNEL)) is pg.Listener
    finally:
        ledger.close()
