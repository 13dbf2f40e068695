"""Typed stub of chainwarden.vocab: the core's vocabularies as enums (checked by mypy.stubtest and
tests/test_vocab.py)."""

from enum import StrEnum
from typing import Final

__all__ = [
    "ENDED_NODE_STATUSES",
    "EXECUTABLE_DAG_NODE_TYPES",
    "CallStatus",
    "DagEdgeType",
    "DagNodeType",
    "DagOutcome",
    "DagState",
    "ErrorCode",
    "NodeKind",
    "NodeStatus",
    "RunErrorCode",
    "RunStatus",
    "StopReason",
]

class CallStatus(StrEnum):
    """How a contained call ended (its record's status)."""

    OK = "ok"
    HALTED = "halted"
    ABORTED = "aborted"
    TIMEOUT = "timeout"
    ERROR = "error"

class DagEdgeType(StrEnum):
    """The type of a DAG edge."""

    SEQUENCE = "sequence"
    DEPENDENCY = "dependency"
    BRANCH = "branch"

class DagNodeType(StrEnum):
    """The type of a DAG node."""

    USER_MESSAGE = "user_message"
    AGENT_MESSAGE = "agent_message"
    TASK = "task"
    SUMMARY = "summary"

class DagOutcome(StrEnum):
    """What an executor may report for its node."""

    FINISHED = "finished"
    ERRORED = "errored"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

class DagState(StrEnum):
    """The state of a DAG node."""

    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    ERRORED = "errored"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"

class ErrorCode(StrEnum):
    """Every error code of the core's registry (`err.code`)."""

    RECORDER_NODE_NOT_FOUND = "recorder.node_not_found"
    RECORDER_BEGIN_NODE_PARENT_NOT_FOUND = "recorder.begin_node.parent_not_found"
    RECORDER_CREATE_ROOT_ROOT_EXISTS = "recorder.create_root.root_exists"
    RECORDER_INVALID_NUMBER = "recorder.invalid_number"
    RECORDER_INVALID_METADATA = "recorder.invalid_metadata"
    RECORDER_FROM_SNAPSHOT_INVALID_SNAPSHOT = "recorder.from_snapshot.invalid_snapshot"
    RECORDER_INVALID_ARGUMENT = "recorder.invalid_argument"
    CONTAINMENT_NOT_OPEN = "containment.not_open"
    CONTAINMENT_INVALID_NUMBER = "containment.invalid_number"
    DAG_NODE_NOT_FOUND = "dag.node_not_found"
    DAG_EDGE_NOT_FOUND = "dag.edge_not_found"
    DAG_INVALID_ARGUMENT = "dag.invalid_argument"
    DAG_EDGE_SELF_LOOP = "dag.edge.self_loop"
    DAG_EDGE_CYCLE = "dag.edge.cycle"
    DAG_EDGE_INACTIVE_ENDPOINT = "dag.edge.inactive_endpoint"
    DAG_FORK_SOURCE_INACTIVE = "dag.fork.source_inactive"
    DAG_FORK_SOURCE_NOT_TERMINAL = "dag.fork.source_not_terminal"
    DAG_RETRY_NOT_RETRIABLE = "dag.retry.not_retriable"
    DAG_RETRY_BAD_STATE = "dag.retry.bad_state"
    DAG_RETRY_DOWNSTREAM_NOT_PENDING = "dag.retry.downstream_not_pending"
    DAG_REGENERATE_BAD_STATE = "dag.regenerate.bad_state"
    DAG_REGENERATE_NOT_LEAF = "dag.regenerate.not_leaf"
    DAG_EDIT_BAD_STATE = "dag.edit.bad_state"
    DAG_EDIT_DOWNSTREAM_ACTIVE = "dag.edit.downstream_active"
    DAG_COMPRESS_ALREADY_COMPRESSED = "dag.compress.already_compressed"
    DAG_COMPRESS_NOT_FINISHED = "dag.compress.not_finished"
    DAG_COMPRESS_SUMMARY_WOULD_BE_LEAF = "dag.compress.summary_would_be_leaf"
    DAG_CLAIM_LEASE_LOST = "dag.claim.lease_lost"
    DAG_GRAPH_NOT_FOUND = "dag.graph_not_found"
    DAG_STORE_BAD_URL = "dag.store.bad_url"
    DAG_STORE_CONNECTION = "dag.store.connection"
    DAG_STORE_COMMIT_UNKNOWN = "dag.store.commit_unknown"
    DAG_STORE_SCHEMA_VERSION = "dag.store.schema_version"
    DAG_STORE_GRAPH_EXISTS = "dag.store.graph_exists"
    DAG_ERROR = "dag.error"
    DAG_STORE_ERROR = "dag.store.error"

class NodeKind(StrEnum):
    """The kind of a call-graph node (`ExecutionGraph`)."""

    LLM = "llm"
    TOOL = "tool"
    SYSTEM = "system"
    MEMORY_READ = "memory_read"
    MEMORY_WRITE = "memory_write"

class NodeStatus(StrEnum):
    """The status of a call-graph node."""

    CREATED = "created"
    RUNNING = "running"
    SUCCESS = "success"
    FAIL = "fail"
    HALT = "halt"

class StopReason(StrEnum):
    """Why a chain refused or stopped a call."""

    BUDGET_EXCEEDED = "budget_exceeded"
    RETRY_BUDGET_EXCEEDED = "retry_budget_exceeded"
    CIRCUIT_OPEN = "circuit_open"
    STEP_LIMIT_EXCEEDED = "step_limit_exceeded"
    TIMEOUT = "timeout"
    ABORTED = "aborted"
    PROVIDER_RATE_LIMIT = "provider_rate_limit"
    PROVIDER_ERROR = "provider_error"

ENDED_NODE_STATUSES: Final[frozenset[NodeStatus]]
EXECUTABLE_DAG_NODE_TYPES: Final[frozenset[DagNodeType]]

class RunStatus(StrEnum):
    """How a run attempt stands in the ledger (`RunRecord.status`); `abandoned`: its process died and its
    lease ran out."""

    RUNNING = "running"
    OK = "ok"
    ERROR = "error"
    ABANDONED = "abandoned"

class RunErrorCode(StrEnum):
    """The code of a run's `Error` event, as the UI stream carries it."""

    INVALID_REQUEST = "invalid_request"
    NOT_FOUND = "not_found"
    TIMEOUT = "timeout"
    ABORTED = "aborted"
    RATE_LIMIT = "rate_limit"
    INTERNAL = "internal"
    INSUFFICIENT_CREDITS = "insufficient_credits"
