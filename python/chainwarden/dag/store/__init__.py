"""Durable DAGs: `Store.open(url)` holds graphs whose every change is committed (docs/dag.md "Stores and
workers"); many worker processes share one graph through leased claims."""

from chainwarden.dag.store.bound import StoredGraph
from chainwarden.dag.store.errors import (
    StoreCommitUnknownError,
    StoreConflictError,
    StoreConnectionError,
    StoreError,
    StoreSchemaError,
    StoreUrlError,
)
from chainwarden.dag.store.schema import SCHEMA_VERSION
from chainwarden.dag.store.store import Store

__all__ = [
    "SCHEMA_VERSION",
    "Store",
    "StoreCommitUnknownError",
    "StoreConflictError",
    "StoreConnectionError",
    "StoreError",
    "StoreSchemaError",
    "StoreUrlError",
    "StoredGraph",
]
