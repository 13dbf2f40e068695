"""The core's vocabularies as Python enums (docs/errors.md "Vocabularies").

Every closed word list the package uses (node kinds and statuses, how a call ended, stop reasons, the DAG's
node types, states, outcomes and edge types, the error codes) is defined once in the Rust core; the native
module exports the words (``_core.VOCABULARIES``, ``_core.ERROR_CODES``) and this module builds one
``enum.StrEnum`` from each at import. Members are strings (``NodeKind.LLM == "llm"``), so every place that
takes or returns the plain word keeps working. ``vocab.pyi`` declares the members for type checkers; it is
checked against this module by ``mypy.stubtest`` and against the core's lists by tests/test_vocab.py.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from chainwarden._core import ERROR_CODES, VOCABULARIES

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


def _enum(name: str, words: tuple[str, ...] | list[str], doc: str) -> type[StrEnum]:
    """A ``StrEnum`` whose members are ``words``, named by the word in upper case (``.`` -> ``_``)."""
    cls = StrEnum(name, [(w.upper().replace(".", "_"), w) for w in words], module=__name__)  # type: ignore[misc]
    cls.__doc__ = doc
    return cls


NodeKind = _enum("NodeKind", VOCABULARIES["node_kind"], "The kind of a call-graph node (`ExecutionGraph`).")
NodeStatus = _enum("NodeStatus", VOCABULARIES["node_status"], "The status of a call-graph node.")
CallStatus = _enum(
    "CallStatus", VOCABULARIES["call_status"], "How a contained call ended (its record's status)."
)
StopReason = _enum("StopReason", VOCABULARIES["stop_reason"], "Why a chain refused or stopped a call.")
DagNodeType = _enum("DagNodeType", VOCABULARIES["dag_node_type"], "The type of a DAG node.")
DagState = _enum("DagState", VOCABULARIES["dag_state"], "The state of a DAG node.")
DagOutcome = _enum("DagOutcome", VOCABULARIES["dag_outcome"], "What an executor may report for its node.")
DagEdgeType = _enum("DagEdgeType", VOCABULARIES["dag_edge_type"], "The type of a DAG edge.")
ErrorCode = _enum("ErrorCode", list(ERROR_CODES), "Every error code of the core's registry (`err.code`).")

ENDED_NODE_STATUSES: Final = frozenset(NodeStatus(w) for w in VOCABULARIES["node_status_ended"])
"""The node statuses that end a node (the core's rule)."""
EXECUTABLE_DAG_NODE_TYPES: Final = frozenset(DagNodeType(w) for w in VOCABULARIES["dag_node_type_executable"])
"""The DAG node types an executor runs (the core's rule)."""


# ---- Words of the runtime only --------------------------------------------------------------------------
# The core has no runs: these two lists belong to the Python runtime and its ledger (docs/runtime.md), and
# are written here, once, beside the core's, so every word list of the package is in this module.


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
