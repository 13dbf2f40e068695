"""Errors of the durable store: a bad URL, an unreachable or lost database, an unknown schema version."""

from __future__ import annotations

from chainwarden.dag.errors import DagNotFoundError


class StoreError(Exception):
    """A durable DAG store could not do what was asked; `.code` names what went wrong."""

    code = "dag.store.error"


class StoreUrlError(StoreError, ValueError):
    """`Store.open` was given a URL it cannot use."""

    code = "dag.store.bad_url"


class StoreConnectionError(StoreError, ConnectionError):
    """The database is unreachable, or the connection was lost mid-call (nothing was committed)."""

    code = "dag.store.connection"


class StoreSchemaError(StoreError):
    """The database holds a schema version this chainwarden does not know."""

    code = "dag.store.schema_version"


class StoreConflictError(StoreError):
    """A graph id given to `create_graph` already exists in the store."""

    code = "dag.store.graph_exists"


def graph_not_found(graph_id: str) -> DagNotFoundError:
    err = DagNotFoundError(f"graph {graph_id!r} not found in the store")
    err.code = "dag.graph_not_found"
    return err
