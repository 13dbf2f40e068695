"""The model's closed vocabularies, as `str` enums that compare equal to the plain strings."""

from __future__ import annotations

from enum import StrEnum


class NodeType(StrEnum):
    USER_MESSAGE = "user_message"
    AGENT_MESSAGE = "agent_message"
    TASK = "task"
    SUMMARY = "summary"


class State(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    ERRORED = "errored"
    REJECTED = "rejected"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class EdgeType(StrEnum):
    SEQUENCE = "sequence"
    DEPENDENCY = "dependency"
    BRANCH = "branch"


EXECUTABLE: frozenset[str] = frozenset({NodeType.TASK, NodeType.AGENT_MESSAGE})
TERMINAL: frozenset[str] = frozenset(
    {State.FINISHED, State.ERRORED, State.REJECTED, State.SKIPPED, State.CANCELLED}
)
