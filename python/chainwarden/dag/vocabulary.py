"""The DAG's closed vocabularies, as `str` enums that compare equal to the plain strings.

They are the core's words (`chainwarden.vocab`, docs/errors.md "Vocabularies"): the enums, and the
subsets the engine decides (which node types an executor runs, which states end a node), are read from the
native module, never written here."""

from __future__ import annotations

from chainwarden.vocab import EXECUTABLE_DAG_NODE_TYPES, DagOutcome, DagState
from chainwarden.vocab import DagEdgeType as EdgeType
from chainwarden.vocab import DagNodeType as NodeType

__all__ = ["EXECUTABLE", "TERMINAL", "EdgeType", "NodeType", "State"]

State = DagState

EXECUTABLE: frozenset[str] = EXECUTABLE_DAG_NODE_TYPES
TERMINAL: frozenset[str] = frozenset(DagOutcome)
