"""Errors of the durable store: a bad URL, an unreachable or lost database, a commit whose outcome was lost,
an unknown schema version.

The classes are defined with the rest of the hierarchy in `chainwarden.errors` (docs/errors.md)."""

from __future__ import annotations

from chainwarden.dag.errors import DagNotFoundError
from chainwarden.errors import (
    StoreCommitUnknownError,
    StoreConflictError,
    StoreConnectionError,
    StoreError,
    StoreSchemaError,
    StoreUrlError,
)
from chainwarden.vocab import ErrorCode

__all__ = [
    "StoreCommitUnknownError",
    "StoreConflictError",
    "StoreConnectionError",
    "StoreError",
    "StoreSchemaError",
    "StoreUrlError",
    "graph_not_found",
]


def graph_not_found(graph_id: str) -> DagNotFoundError:
    err = DagNotFoundError(f"graph {graph_id!r} not found in the store")
    err.code = ErrorCode.DAG_GRAPH_NOT_FOUND
    return err
