"""The store's tables (the same on SQLite and PostgreSQL) and their versions (`chainwarden._sql.schema`).

One row per graph: its committed `version` (the row every change locks), its `leaf_repair` flag, and its work
at a glance — `claimable` nodes, `running` nodes and the earliest `lease_due` among them — so workers find
work through an index instead of loading graphs (docs/dag.md "Workers"). One row per node, edge and event
holding the record as JSON, keyed by its arena position so a load rebuilds the same graph; each carries the
graph version that last wrote it, so catching up reads only rows newer than what a process has seen. One row
per recent change with its change id, so a commit whose outcome was lost is resolved (docs/design.md §33).
"""

from __future__ import annotations

from typing import Any

from chainwarden._sql import Schema, table_exists

#: Version 1 kept its number in `chainwarden_dag_meta`; it is still written there so that releases which read
#: only that table refuse a newer store instead of writing into it.
META = "chainwarden_dag_meta"

_V1 = [
    f"CREATE TABLE IF NOT EXISTS {META} (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chainwarden_dag_graphs ("
    " graph_id TEXT PRIMARY KEY, version BIGINT NOT NULL, created_at DOUBLE PRECISION NOT NULL)",
    "CREATE TABLE IF NOT EXISTS chainwarden_dag_nodes ("
    " graph_id TEXT NOT NULL, seq BIGINT NOT NULL, node_id TEXT NOT NULL, version BIGINT NOT NULL,"
    " record TEXT NOT NULL, PRIMARY KEY (graph_id, seq))",
    "CREATE TABLE IF NOT EXISTS chainwarden_dag_edges ("
    " graph_id TEXT NOT NULL, seq BIGINT NOT NULL, edge_id TEXT NOT NULL, version BIGINT NOT NULL,"
    " record TEXT NOT NULL, PRIMARY KEY (graph_id, seq))",
    "CREATE TABLE IF NOT EXISTS chainwarden_dag_events ("
    " graph_id TEXT NOT NULL, seq BIGINT NOT NULL, version BIGINT NOT NULL,"
    " record TEXT NOT NULL, PRIMARY KEY (graph_id, seq))",
    "CREATE INDEX IF NOT EXISTS chainwarden_dag_nodes_version ON chainwarden_dag_nodes (graph_id, version)",
    "CREATE INDEX IF NOT EXISTS chainwarden_dag_edges_version ON chainwarden_dag_edges (graph_id, version)",
    "CREATE INDEX IF NOT EXISTS chainwarden_dag_events_version ON chainwarden_dag_events (graph_id, version)",
    f"INSERT INTO {META} (key, value) VALUES ('schema_version', '1') ON CONFLICT (key) DO NOTHING",
]

_V2 = [
    "ALTER TABLE chainwarden_dag_graphs ADD COLUMN leaf_repair BOOLEAN NOT NULL DEFAULT TRUE",
    "ALTER TABLE chainwarden_dag_graphs ADD COLUMN claimable INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE chainwarden_dag_graphs ADD COLUMN running INTEGER NOT NULL DEFAULT 0",
    "ALTER TABLE chainwarden_dag_graphs ADD COLUMN lease_due DOUBLE PRECISION",
    # Graphs of a version-1 store: their work is unknown until a worker looks; the first change a worker makes
    # on each writes the true figures (`StoredGraph._record`).
    "UPDATE chainwarden_dag_graphs SET claimable = 1, lease_due = 0",
    "CREATE INDEX IF NOT EXISTS chainwarden_dag_graphs_claimable ON chainwarden_dag_graphs (graph_id) "
    "WHERE claimable > 0",
    "CREATE INDEX IF NOT EXISTS chainwarden_dag_graphs_lease_due ON chainwarden_dag_graphs (lease_due) "
    "WHERE lease_due IS NOT NULL",
    "CREATE TABLE IF NOT EXISTS chainwarden_dag_changes (graph_id TEXT NOT NULL, version BIGINT NOT NULL,"
    " change_id TEXT NOT NULL, PRIMARY KEY (graph_id, version))",
    f"UPDATE {META} SET value = '2' WHERE key = 'schema_version'",
]

#: How many recent changes of a graph keep their change id (a lost commit is resolved within seconds).
CHANGES_KEPT = 10_000


def _legacy(cur: Any) -> int:
    """A store made before `chainwarden_schema`: its version from `chainwarden_dag_meta`, or 0 (none)."""
    if not table_exists(cur, META):
        return 0
    cur.execute(f"SELECT value FROM {META} WHERE key = 'schema_version'")
    row = cur.fetchone()
    return 0 if row is None else int(row[0])


SCHEMA = Schema("dag", (_V1, _V2), legacy=_legacy)
#: Bumped when the tables change; `Store.open` refuses a database with a newer version.
SCHEMA_VERSION = SCHEMA.version
