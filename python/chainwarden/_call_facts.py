"""What an integration learns about a provider call besides its cost and tokens, kept on the call's node.

The integrations (docs/integrations.md) annotate the node of each provider call with these metadata keys, so
snapshots, reports and the OpenTelemetry export see them the same way (the export maps them to the GenAI
semantic conventions' attributes, docs/integrations.md "What a span looks like"). Captured content has its
own keys (``content_input`` / ``content_output``, docs/containment.md "Content capture").
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "CACHE_READ_TOKENS",
    "CACHE_WRITE_TOKENS",
    "CONTENT_INPUT",
    "CONTENT_OUTPUT",
    "FINISH_REASONS",
    "PROVIDER",
    "REQUEST_MODEL",
    "RESERVED",
    "RESPONSE_ID",
]

PROVIDER: Final = "provider"  # the provider's name as genai-prices and the conventions spell it
REQUEST_MODEL: Final = "request_model"  # the model asked for (the node's model is the one that answered)
RESPONSE_ID: Final = "response_id"
FINISH_REASONS: Final = "finish_reasons"  # a list of str, one per choice
CACHE_READ_TOKENS: Final = "cache_read_tokens"  # input tokens read from the prompt cache
CACHE_WRITE_TOKENS: Final = "cache_write_tokens"  # input tokens written to it
CONTENT_INPUT: Final = "content_input"
CONTENT_OUTPUT: Final = "content_output"

#: Keys with a meaning of their own: never exported as plain ``chainwarden.metadata.<key>`` attributes.
RESERVED: Final = frozenset(
    {
        PROVIDER,
        REQUEST_MODEL,
        RESPONSE_ID,
        FINISH_REASONS,
        CACHE_READ_TOKENS,
        CACHE_WRITE_TOKENS,
        CONTENT_INPUT,
        CONTENT_OUTPUT,
    }
)
