"""Errors of the durable store: a bad URL, an unreachable or lost database, a commit whose outcome was lost,
an unknown schema version."""

from __future__ import annotations

from chainwarden.dag.errors import DagNotFoundError


class StoreError(Exception):
    """A durable DAG store could not do what was asked; `.code` names what went wrong."""

    code = "dag.store.error"


class StoreUrlError(StoreError, ValueError):
    """`Store.open` was given a URL it cannot use."""

    code = "dag.store.bad_url"


class StoreConnectionError(StoreError, ConnectionError):
    """The database is unreachable, or the connection was lost mid-call and the change did not land (it was
    not committed; running it again applies it once)."""

    code = "dag.store.connection"


class StoreCommitUnknownError(StoreConnectionError):
    """The connection broke while a change was being committed and the database could not be reached again
    to find out whether it landed (docs/design.md §33). The graph object reloads before its next call; look at
    the graph (`refresh()`) before doing the change again."""

    code = "dag.store.commit_unknown"


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
