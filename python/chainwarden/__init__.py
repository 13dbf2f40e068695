"""chainwarden: record, contain, schedule and bill LLM-agent runs on a Rust core."""

from chainwarden._core import __version__

__all__ = ["__version__"]
