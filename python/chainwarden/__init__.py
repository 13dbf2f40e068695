"""chainwarden: record, contain, schedule and bill LLM-agent runs on a Rust core."""

import logging

from chainwarden._core import ExecutionGraph, NodeEvent, __version__
from chainwarden._default_recorder import default_recorder
from chainwarden.containment import (
    ChainMetadata,
    ContextSnapshot,
    ExecutionConfig,
    ExecutionContext,
    WrapOptions,
    contained,
    current_context,
)
from chainwarden.integrations.instrument import instrument, uninstrument
from chainwarden.shield import Decision, SafetyEvent, ShieldPipeline

# A library logs; the application decides where it goes (docs/containment.md, "Logging").
logging.getLogger("chainwarden").addHandler(logging.NullHandler())

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
    "contained",
    "current_context",
    "default_recorder",
    "instrument",
    "uninstrument",
]
