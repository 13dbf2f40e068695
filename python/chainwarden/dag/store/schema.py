"""The store's tables (the same on SQLite and PostgreSQL) and their version.

One row per graph (its committed `version`, the row every change locks), and one row per node, edge and event
holding the record as JSON, keyed by its arena position so a load rebuilds the same graph. Each row carries
the graph version that last wrote it: catching up reads only rows newer than what a process has seen.
"""

from __future__ import annotations

#: Bumped when the tables change; `Store.open` refuses a database with another version.
SCHEMA_VERSION = 1

META = "CREATE TABLE IF NOT EXISTS chainwarden_dag_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"

TABLES = [
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
]

ROW_TABLES = ("chainwarden_dag_nodes", "chainwarden_dag_edges", "chainwarden_dag_events")
