"""What the other packages use of the integrations' provider knowledge: a response's usage read and priced,
a prompt's token estimate, the Anthropic Messages dialect. The runtime's executors (Anthropic, Claude Agent
SDK, LangGraph) and containment's `response_hint` read usage as the instrumented clients do, through these
names only (ARCHITECTURE.md "Layering"; docs/integrations.md "Usage the provider reports").
"""

from __future__ import annotations

from chainwarden.integrations._anthropic import MESSAGES
from chainwarden.integrations._estimate import estimate, prompt_tokens
from chainwarden.integrations._response import priced_response
from chainwarden.integrations._usage import Usage, UsageError, count, note_usage_missing, price_of

__all__ = [
    "MESSAGES",
    "Usage",
    "UsageError",
    "count",
    "estimate",
    "note_usage_missing",
    "price_of",
    "priced_response",
    "prompt_tokens",
]
