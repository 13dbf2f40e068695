"""chainwarden: record, contain, schedule and bill LLM-agent runs on a Rust core."""

from chainwarden._core import ExecutionGraph, NodeEvent, __version__

__all__ = ["ExecutionGraph", "NodeEvent", "__version__"]
