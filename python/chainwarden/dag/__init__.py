"""chainwarden.dag: the conversation / task DAG (docs/dag-rules.md) on the Rust core.

`Graph` holds nodes and edges, `Runner` executes what is ready in one graph, `Store` keeps graphs and
`WorkerPool` serves every graph of a store from many processes and hosts; see docs/dag.md.
"""

from chainwarden._core import Mutation
from chainwarden.dag.errors import (
    DAG_ERROR_CODES,
    DagEdgeError,
    DagError,
    DagInvalidArgumentError,
    DagNotFoundError,
    DagPreconditionError,
)
from chainwarden.dag.graph import Graph
from chainwarden.dag.pool import PoolStats, WorkerPool
from chainwarden.dag.result import ExecutionResult
from chainwarden.dag.runner import Executor, Runner, RunStats
from chainwarden.dag.store import (
    Store,
    StoreCommitUnknownError,
    StoreConflictError,
    StoreConnectionError,
    StoredGraph,
    StoreError,
    StoreSchemaError,
    StoreUrlError,
)
from chainwarden.dag.vocabulary import EXECUTABLE, TERMINAL, EdgeType, NodeType, State

__all__ = [
    "DAG_ERROR_CODES",
    "EXECUTABLE",
    "TERMINAL",
    "DagEdgeError",
    "DagError",
    "DagInvalidArgumentError",
    "DagNotFoundError",
    "DagPreconditionError",
    "EdgeType",
    "ExecutionResult",
    "Executor",
    "Graph",
    "Mutation",
    "NodeType",
    "PoolStats",
    "RunStats",
    "Runner",
    "State",
    "Store",
    "StoreCommitUnknownError",
    "StoreConflictError",
    "StoreConnectionError",
    "StoreError",
    "StoreSchemaError",
    "StoreUrlError",
    "StoredGraph",
    "WorkerPool",
]
