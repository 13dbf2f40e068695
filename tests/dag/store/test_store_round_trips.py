"""A committed change on PostgreSQL is one round trip for the lock (BEGIN, the row lock, the rows newer than
the caller's version and the database's clock) plus one pipelined round trip writing everything and
committing (docs/design.md §33): counted from libpq's protocol trace on the real server, never timed."""

from __future__ import annotations

import uuid

from pg_trace import round_trips, statements, traced
from store_urls import postgres_url

from chainwarden.dag import Store


def test_a_committed_change_is_the_lock_plus_one_round_trip() -> None:
    with Store.open(postgres_url(f"rt_{uuid.uuid4().hex[:10]}"), pool_size=1) as store:
        g = store.create_graph("g", leaf_repair=False)
        for i in range(6):  # past the first use of each prepared statement
            with g.mutate() as m:
                m.create_node("task", node_id=f"warm{i}")
        pool = store._backend._pool
        conn = pool.getconn(5)
        pool.putconn(conn)  # the pool's only connection: every change below uses it
        with traced(conn) as measure:
            created = measure(lambda: _create(g, "t1"))
            got: list[str] = []
            claimed = measure(lambda: got.extend(g.claim(1, worker_id="w", lease_s=30)))
            applied = measure(lambda: g.apply_result(got[0], "finished", worker_id="w"))
            nothing = measure(lambda: g.claim(0))
            leased = measure(lambda: g._claim_leased(2, "w", 30.0))
    for trace in (created, claimed, applied, leased):
        assert (round_trips(trace), statements(trace)) == (2, 5), trace
    assert round_trips(nothing) == 2  # a change that changes nothing: the lock, then ROLLBACK
    assert "pg_notify" not in created  # prepared once: the statement text is not sent again


def _create(g: object, node_id: str) -> None:
    with g.mutate() as m:  # type: ignore[attr-defined]
        m.create_node("task", node_id=node_id)
