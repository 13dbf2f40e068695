"""Integrations with the frameworks and clients users already call (docs/integrations.md).

Each one is an optional extra and imports its framework lazily: ``chainwarden.integrations.langchain``
(``chainwarden[langchain]``), ``chainwarden.integrations.langgraph`` (``chainwarden[langgraph]``) and
``chainwarden.instrument`` for the OpenAI and Anthropic clients (``chainwarden[openai]``,
``chainwarden[anthropic]``). ``UsageError`` is what a call ends with when its provider reports usage that
cannot be a token count.
"""

from chainwarden.integrations._usage import UsageError

__all__ = ["UsageError"]
