"""chainwarden: record, contain, schedule and bill LLM-agent runs on a Rust core."""

from chainwarden._core import ExecutionGraph, NodeEvent, __version__
from chainwarden.containment import (
    ChainMetadata,
    ContextSnapshot,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
)
from chainwarden.integrations.clients import instrument
from chainwarden.shield import Decision, SafetyEvent, ShieldPipeline

__all__ = [
    "ChainMetadata",
    "ContextSnapshot",
    "Decision",
    "ExecutionConfig",
    "ExecutionContext",
    "ExecutionGraph",
    "NodeEvent",
    "SafetyEvent",
    "ShieldPipeline",
    "WrapOptions",
    "__version__",
    "instrument",
]
